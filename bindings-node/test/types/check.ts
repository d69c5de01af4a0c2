// Compiled with `tsc --noEmit`: ingle's results must be assignable to the openai package's types.
import OpenAI from 'ingle';
import type { ChatCompletion, ChatCompletionChunk } from 'openai/resources/chat/completions';
import type { Completion } from 'openai/resources/completions';
import type { Model } from 'openai/resources/models';
import type { CreateEmbeddingResponse } from 'openai/resources/embeddings';
import type { SpeechCreateParams } from 'openai/resources/audio/speech';
import type { APIPromise } from 'openai/core/api-promise';

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
  void r, t, m, e, floats, b64, audio, body, contentType;
}
