// Compiled with `tsc --noEmit`: ingle's results must be assignable to the openai package's types.
import OpenAI, { Anthropic, Parameter, beta, predictor } from 'ingle';
import type { PullProgress, PullResult } from 'ingle';
import type { ChatCompletion, ChatCompletionChunk } from 'openai/resources/chat/completions';
import type { Completion } from 'openai/resources/completions';
import type { Model } from 'openai/resources/models';
import type { CreateEmbeddingResponse } from 'openai/resources/embeddings';
import type { SpeechCreateParams } from 'openai/resources/audio/speech';
import type { APIPromise } from 'openai/core/api-promise';
import type {
  Transcription,
  TranscriptionVerbose,
  TranscriptionCreateParamsNonStreaming,
  TranscriptionCreateParamsStreaming,
  TranscriptionTextDeltaEvent,
  TranscriptionTextDoneEvent,
} from 'openai/resources/audio/transcriptions';
import type { Translation, TranslationVerbose } from 'openai/resources/audio/translations';
import type {
  Response as OpenAIResponse,
  ResponseStreamEvent as OpenAIResponseStreamEvent,
  ResponseItem as OpenAIResponseItem,
  ResponseCreateParamsNonStreaming as OpenAIResponseCreateParams,
  ResponseOutputItem as OpenAIResponseOutputItem,
} from 'openai/resources/responses/responses';
import type { ResponseItemList as OpenAIResponseItemList } from 'openai/resources/responses/input-items';
import type { InputTokenCountResponse } from 'openai/resources/responses/input-tokens';
import type {
  Message as AnthropicSdkMessage,
  MessageTokensCount as AnthropicSdkTokensCount,
  TextBlock as AnthropicSdkTextBlock,
  Usage as AnthropicSdkUsage,
} from '@anthropic-ai/sdk/resources/messages/messages';
import type {
  ImagesResponse as OpenAIImagesResponse,
  ImageGenStreamEvent as OpenAIImageGenStreamEvent,
} from 'openai/resources/images';
import { toFile } from 'openai';
import { createReadStream } from 'node:fs';

export async function check(): Promise<void> {
  const client = new OpenAI({ apiKey: 'unused' });
  const messages = [{ role: 'user' as const, content: 'Hi' }];
  const r: ChatCompletion = await client.chat.completions.create({ model: 'm', messages });
  const stream = await client.chat.completions.create({ model: 'm', messages, stream: true });
  for await (const chunk of stream) {
    const c: ChatCompletionChunk = chunk;
    void c;
  }
  await client.chat.completions.create({ model: 'm', messages }, { signal: null });
  const t: Completion = await client.completions.create({ model: 'm', prompt: 'Once' });
  const m: Model = await client.models.retrieve('m');
  const pulled: PullResult = await client.models.pull('m', {
    onProgress: (event: PullProgress) => void event.completed,
    signal: new AbortController().signal,
  });
  const fetched: boolean = pulled.files[0].fetched;
  void fetched;
  const e: CreateEmbeddingResponse = await client.embeddings.create({ model: 'm', input: ['a', 'b'] });
  const floats: Float32Array = (await client.embeddings.create({ model: 'm', input: 'a' })).matrix.data;
  const b64: string = (await client.embeddings.create({ model: 'm', input: 'a', encoding_format: 'base64' }))
    .data[0].embedding;
  // Speech: the same parameters as openai's, and its result (a fetch Response) where openai's goes.
  const params = { model: 'm', input: 'Hi', voice: 'alloy', response_format: 'wav', speed: 1.5 } satisfies SpeechCreateParams;
  const speech: Awaited<APIPromise<Response>> = await client.audio.speech.create(params, { signal: null });
  const audio: ArrayBuffer = await speech.arrayBuffer();
  const body: ReadableStream<Uint8Array> | null = speech.body;
  const contentType: string | null = speech.headers.get('content-type');
  await client.audio.speech.create({ model: 'm', input: 'Hi', voice: 'joe', stream_format: 'sse' });
  // Transcriptions: openai's parameter values (every kind of file openai takes) go in, its result
  // types come out, per response_format as in openai's overloads.
  const upload = { model: 'm', file: createReadStream('a.wav') } satisfies TranscriptionCreateParamsNonStreaming;
  const tr: Transcription = await client.audio.transcriptions.create(upload, { signal: null });
  const named = await toFile(new Uint8Array(8), 'a.wav');
  const verbose: TranscriptionVerbose = await client.audio.transcriptions.create({
    model: 'm', file: named, response_format: 'verbose_json', timestamp_granularities: ['word', 'segment'],
  });
  const srt: string = await client.audio.transcriptions.create({ model: 'm', file: new Blob([]), response_format: 'srt' });
  const text: string = await client.audio.transcriptions.create({ model: 'm', file: Buffer.alloc(8), response_format: 'text' });
  const raw: Transcription = await client.audio.transcriptions.create({
    model: 'm', file: { samples: new Float32Array(16000), sample_rate: 16000 },
  });
  const openaiParams: TranscriptionCreateParamsNonStreaming<'vtt'> = { model: 'm', file: named, response_format: 'vtt' };
  const vtt: string = await client.audio.transcriptions.create(openaiParams);
  const streamed: TranscriptionCreateParamsStreaming = { model: 'm', file: named, stream: true };
  for await (const event of await client.audio.transcriptions.create(streamed)) {
    if (event.type === 'transcript.text.delta') {
      const delta: TranscriptionTextDeltaEvent = event;
      void delta;
    } else {
      // The done event's usage is the audio's seconds, where openai's type has tokens.
      const done: Omit<TranscriptionTextDoneEvent, 'usage'> = event;
      const seconds: number | undefined = event.usage?.seconds;
      void done, seconds;
    }
  }
  // Translations: the same, per response_format; ingle also takes `language`.
  const translation: Translation = await client.audio.translations.create({ model: 'm', file: named });
  const translatedVerbose: TranslationVerbose = await client.audio.translations.create({
    model: 'm', file: named, response_format: 'verbose_json', timestamp_granularities: ['segment'],
  });
  const translatedSrt: string = await client.audio.translations.create({
    model: 'm', file: createReadStream('fr.flac'), response_format: 'srt', language: 'fr',
  });
  void r, t, m, e, floats, b64, audio, body, contentType, tr, verbose, srt, text, raw, vtt, translation;
  void translatedVerbose, translatedSrt;
}

// Predictors: annotations take their own fields, and leaving a required one out is a type error.
export function predictors(): OpenAI {
  const tone = predictor({
    tag: '@me/tone',
    inputs: [
      Parameter.Generic({ name: 'text', type: 'string' }),
      Parameter.AudioVoice({ name: 'voice', voices: ['low', 'high'] }),
      Parameter.AudioSpeed({ name: 'speed', default: 1, min: 0.25, max: 4 }),
    ],
    outputs: [Parameter.Audio({ name: 'audio', sample_rate: 24000 })],
  }, ({ text }) => new Float32Array(text.length));
  const echo = predictor({ tag: '@me/echo', inputs: [Parameter.ChatMessages({ name: 'messages' })] },
    async function* ({ messages }) { yield String(messages.length); });
  // @ts-expect-error Audio needs its sample_rate
  Parameter.Audio({ name: 'audio' });
  // @ts-expect-error AudioVoice needs its voices
  Parameter.AudioVoice({ name: 'voice' });
  // @ts-expect-error every parameter has a name
  Parameter.Generic({ type: 'string' });
  // @ts-expect-error types are ingle's
  Parameter.Generic({ name: 'x', type: 'complex' });
  // Muna's names (beta.Annotations) take the same fields.
  const chat = predictor({
    tag: '@me/chat',
    inputs: [
      Parameter.ChatMessages({ name: 'messages' }),
      beta.Annotations.MaxOutputTokens({ name: 'max_output_tokens', default: 256 }),
      beta.Annotations.SamplingTemperature({ name: 'temperature', default: 1, min: 0, max: 2 }),
      beta.Annotations.PresencePenalty({ name: 'presence_penalty', default: 0 }),
    ],
  }, function* ({ messages }) { yield String(messages.length); });
  // @ts-expect-error every parameter has a name
  beta.Annotations.SamplingProbability({ default: 1 });
  // A transcription predictor that translates (its TranscriptionTask input) and reports the
  // language it heard (a TranscriptionLanguage output).
  const interpret = predictor({
    tag: '@me/interpret',
    inputs: [
      Parameter.Audio({ name: 'speech', sample_rate: 16000 }),
      Parameter.TranscriptionTask({ name: 'task', default: 'transcribe' }),
    ],
    outputs: [Parameter.TextDelta({ name: 'text' }), Parameter.TranscriptionLanguage({ name: 'language', required: false })],
  }, function* ({ task }) { yield [task === 'translate' ? 'Hello.' : 'Bonjour.', 'fr']; });
  // @ts-expect-error every parameter has a name
  beta.Annotations.TranscriptionTask({ default: 'translate' });
  void interpret;
  const client = new OpenAI({ predictors: [tone] });
  client.predictors.register(echo);
  void chat;
  return client;
}

/** The Responses API: openai's parameters go in, its types come out. */
export async function checkResponses(client: OpenAI): Promise<void> {
  const params = {
    model: 'm',
    input: [
      { role: 'user', content: 'Weather in Paris?' },
      { type: 'function_call', call_id: 'c1', name: 'weather', arguments: '{"city":"Paris"}' },
      { type: 'function_call_output', call_id: 'c1', output: '21 C' },
    ],
    instructions: 'Be brief.',
    tools: [{ type: 'function', name: 'weather', parameters: { type: 'object' }, strict: true }],
    tool_choice: 'auto',
    text: { format: { type: 'json_schema', name: 'w', schema: { type: 'object' } } },
    max_output_tokens: 64,
    metadata: { case: 'types' },
  } satisfies OpenAIResponseCreateParams;
  const response: OpenAIResponse = await client.responses.create(params);
  const text: string = response.output_text;
  const item: OpenAIResponseOutputItem = response.output[0];
  const events = await client.responses.create({ model: 'm', input: 'Hi', stream: true });
  for await (const event of events) {
    const e: OpenAIResponseStreamEvent = event;
    if (event.type === 'response.output_text.delta') void event.delta.length;
    void e;
  }
  const helper = client.responses.stream({ model: 'm', input: 'Hi' });
  helper.on('response.output_text.delta', (event) => void event.delta.length);
  for await (const event of helper) {
    const e: OpenAIResponseStreamEvent = event;
    void e;
  }
  const final: OpenAIResponse = await helper.finalResponse();
  const parsed = await client.responses.parse<{ city: string }>(params);
  const city: string | undefined = parsed.output_parsed?.city;
  const again: OpenAIResponse = await client.responses.retrieve(response.id);
  const page: OpenAIResponseItemList = await client.responses.inputItems.list(response.id, { limit: 5, order: 'asc' });
  for await (const input of client.responses.inputItems.list(response.id)) {
    const i: OpenAIResponseItem = input;
    void i;
  }
  const counted: InputTokenCountResponse = await client.responses.inputTokens.count(params);
  await client.responses.delete(response.id);
  void [counted, text, item, final, city, again, page];
}

// rerank: typed params and results.
async function rerank(client: OpenAI) {
  const r = await client.rerank.create({ model: 'm', query: 'q', documents: ['a', { text: 'b' }], top_n: 1 });
  const first: number = r.results[0].relevance_score;
  const text: string | undefined = r.results[0].document?.text;
  return [first, text];
}
void rerank;

// tokenize / detokenize: ids, or pieces with `with_pieces: true`.
async function tokens(client: OpenAI) {
  const ids: number[] = (await client.tokenize({ model: 'm', content: 'Hi' })).tokens;
  const piece: string | number[] = (await client.tokenize({ model: 'm', content: 'Hi', with_pieces: true })).tokens[0].piece;
  const text: string = (await client.detokenize({ model: 'm', tokens: ids })).content;
  // @ts-expect-error: ids are numbers
  await client.detokenize({ model: 'm', tokens: ['a'] });
  return [piece, text];
}
void tokens;

// Anthropic: ingle's messages have the @anthropic-ai/sdk types' fields that a local model gives
// (the SDK's server-side fields, such as `container`, `caller` or `inference_geo`, it does not).
async function anthropicMessages() {
  const claude = new Anthropic({ apiKey: 'ignored' });
  const body = { model: 'm', max_tokens: 8, messages: [{ role: 'user' as const, content: 'Hi' }] };
  const m = await claude.messages.create(body);
  const fields: Pick<AnthropicSdkMessage, 'id' | 'type' | 'role' | 'stop_reason' | 'stop_sequence'> = m;
  const usage: Pick<AnthropicSdkUsage, 'input_tokens' | 'output_tokens' | 'cache_read_input_tokens' | 'cache_creation_input_tokens'> = m.usage;
  const block = m.content[0];
  if (block.type === 'text') {
    const text: AnthropicSdkTextBlock = block;
    void text;
  }
  const raw = await claude.messages.create({ ...body, stream: true });
  for await (const event of raw) {
    if (event.type === 'content_block_delta' && event.delta.type === 'text_delta') void event.delta.text.length;
  }
  const counted: AnthropicSdkTokensCount = await claude.messages.countTokens({ model: 'm', messages: body.messages });
  const stream = claude.messages.stream(body);
  stream.on('text', (delta, snapshot) => void (delta.length + snapshot.length));
  const final = await stream.finalMessage();
  const text: string = await stream.finalText();
  return [fields, usage, counted, final, text];
}
void anthropicMessages;

// images: ingle's answers are openai's ImagesResponse and ImageGenStreamEvent.
async function images(client: OpenAI) {
  const r: OpenAIImagesResponse = await client.images.generate({ model: 'm', prompt: 'red', size: '16x16', n: 2 });
  const stream = await client.images.generate({ model: 'm', prompt: 'red', stream: true, partial_images: 2 });
  for await (const event of stream) {
    const e: OpenAIImageGenStreamEvent = event;
    void e;
  }
  return r;
}
void images;
