import type {
  ParsedResponse,
  Response,
  ResponseCreateParams,
  ResponseCreateParamsNonStreaming,
  ResponseCreateParamsStreaming,
  ResponseItem,
  ResponseItemList,
  ResponseStream,
  ResponseStreamEvent,
} from './responses';
export * from './responses';
export * from './anthropic';
import type { Metrics } from './metrics';
export * from './metrics';
import type { SystemInfo } from './system';
export * from './system';
import type { TokenizeParams, TokenizeResponse, DetokenizeParams, DetokenizeResponse } from './tokens';
export * from './tokens';
import type { RerankCreateParams, RerankResponse } from './rerank';
export * from './rerank';
import type {
  SpeechVoice,
  SpeechCreateParams,
  RawAudio,
  AudioFile,
  AudioResponseFormat,
  TranscriptionCreateParamsBase,
  TranscriptionCreateParamsNonStreaming,
  TranscriptionCreateParamsStreaming,
  TranscriptionCreateParams,
  TranscriptionUsageDuration,
  Transcription,
  TranscriptionSegment,
  TranscriptionWord,
  TranscriptionVerbose,
  TranscriptionTextDeltaEvent,
  TranscriptionTextDoneEvent,
  TranscriptionStreamEvent,
  TranslationCreateParams,
  Translation,
  TranslationVerbose,
} from './audio';
export * from './audio';

// Types of the `ingle` package. The response types have the shapes of the `openai` package's
// (`ChatCompletion`, `ChatCompletionChunk`, `Completion`, `Model`, `Transcription`, ...), so
// values can be assigned to them; test/types checks that with tsc.

export interface CompletionUsage {
  completion_tokens: number;
  prompt_tokens: number;
  total_tokens: number;
  /** `cached_tokens`: prompt tokens whose KV cache was reused from an earlier request (ingle's
   * prompt cache). */
  prompt_tokens_details?: { cached_tokens?: number };
}

/** A call the model made; `arguments` is JSON text. */
export interface ChatCompletionMessageToolCall {
  id: string;
  type: 'function';
  function: { name: string; arguments: string };
}

export interface ChatCompletionMessage {
  /** `null` when the reply is only tool calls. */
  content: string | null;
  refusal: string | null;
  role: 'assistant';
  tool_calls?: Array<ChatCompletionMessageToolCall>;
}

export interface TopLogprob {
  token: string;
  bytes: Array<number> | null;
  logprob: number;
}

/** A token's log-softmax over the raw logits of its position, with the most likely others. */
export interface ChatCompletionTokenLogprob extends TopLogprob {
  top_logprobs: Array<TopLogprob>;
}

export interface ChoiceLogprobs {
  content: Array<ChatCompletionTokenLogprob> | null;
  refusal: Array<ChatCompletionTokenLogprob> | null;
}

export interface ChatCompletionChoice {
  finish_reason: 'stop' | 'length' | 'tool_calls';
  index: number;
  /** With `logprobs: true`. */
  logprobs: ChoiceLogprobs | null;
  message: ChatCompletionMessage;
}

export interface ChatCompletion {
  id: string;
  choices: Array<ChatCompletionChoice>;
  created: number;
  model: string;
  object: 'chat.completion';
  usage?: CompletionUsage;
}

/** A piece of a streamed call: `id`, `type` and `function.name` in its first delta,
 * `function.arguments` fragments after; `index` counts calls from 0. */
export interface ChatCompletionChunkToolCall {
  index: number;
  id?: string;
  type?: 'function';
  function?: { name?: string; arguments?: string };
}

export interface ChatCompletionChunkDelta {
  content?: string | null;
  refusal?: string | null;
  role?: 'assistant';
  tool_calls?: Array<ChatCompletionChunkToolCall>;
}

export interface ChatCompletionChunkChoice {
  delta: ChatCompletionChunkDelta;
  finish_reason: 'stop' | 'length' | 'tool_calls' | null;
  index: number;
  logprobs?: ChoiceLogprobs | null;
}

export interface ChatCompletionChunk {
  id: string;
  choices: Array<ChatCompletionChunkChoice>;
  created: number;
  model: string;
  object: 'chat.completion.chunk';
  /** Only on the last chunk, with `stream_options: { include_usage: true }` (then `choices` is empty). */
  usage?: CompletionUsage | null;
}

/** Legacy completions' log probabilities (with `logprobs: k`). */
export interface CompletionLogprobs {
  tokens: Array<string>;
  token_logprobs: Array<number>;
  top_logprobs: Array<Record<string, number>>;
  text_offset: Array<number>;
}

export interface CompletionChoice {
  /** `null` on every streamed chunk but the last, as in the OpenAI API. */
  finish_reason: 'stop' | 'length';
  index: number;
  logprobs: CompletionLogprobs | null;
  text: string;
}

export interface Completion {
  id: string;
  choices: Array<CompletionChoice>;
  created: number;
  model: string;
  object: 'text_completion';
  usage?: CompletionUsage;
}

export type EmbeddingEncoding = 'float' | 'base64';

export interface Embedding<F extends EmbeddingEncoding = 'float'> {
  /** Numbers, or with `encoding_format: 'base64'` the base64 of little-endian float32 bytes. */
  embedding: F extends 'base64' ? string : Array<number>;
  index: number;
  object: 'embedding';
}

export interface ImageGenerateParams {
  model: string;
  prompt: string;
  /** 1 to 10; the predictor's ImageCount. */
  n?: number | null;
  /** 'WIDTHxHEIGHT' (each side 1 to 4096) or 'auto' (the predictor's defaults). */
  size?: string | null;
  /** Only 'b64_json': ingle keeps no files to link to. */
  response_format?: 'b64_json' | null;
  output_format?: 'png' | 'jpeg' | 'webp' | null;
  /** JPEG quality, 0 to 100. */
  output_compression?: number | null;
  background?: 'transparent' | 'opaque' | 'auto' | null;
  quality?: 'low' | 'medium' | 'high' | 'auto' | 'standard' | 'hd' | null;
  /** 0 to 3. */
  partial_images?: number | null;
  moderation?: 'low' | 'auto' | null;
  style?: 'vivid' | 'natural' | null;
  user?: string;
  stream?: boolean | null;
}
export interface ImageGenerateParamsNonStreaming extends ImageGenerateParams {
  stream?: false | null;
}
export interface ImageGenerateParamsStreaming extends ImageGenerateParams {
  stream: true;
}

export interface ImagesResponse {
  created: number;
  /** Each image, its encoded file in base64. */
  data: Array<{ b64_json: string }>;
  background: 'transparent' | 'opaque';
  output_format: 'png' | 'jpeg' | 'webp';
  /** The `quality` asked for, when it is one of these. */
  quality?: 'low' | 'medium' | 'high';
  /** 'WIDTHxHEIGHT' of the first image. */
  size: string;
}

interface ImageGenEventFields {
  b64_json: string;
  background: 'transparent' | 'opaque';
  created_at: number;
  output_format: 'png' | 'jpeg' | 'webp';
  quality: 'low' | 'medium' | 'high' | 'auto';
  size: string;
}
export type ImageGenStreamEvent =
  | (ImageGenEventFields & { type: 'image_generation.partial_image'; partial_image_index: number })
  | (ImageGenEventFields & {
    type: 'image_generation.completed';
    /** Predictors count no tokens: all zero. */
    usage: { input_tokens: number; output_tokens: number; total_tokens: number; input_tokens_details: { image_tokens: number; text_tokens: number } };
  });

export interface CreateEmbeddingResponse<F extends EmbeddingEncoding = 'float'> {
  data: Array<Embedding<F>>;
  model: string;
  object: 'list';
  usage: { prompt_tokens: number; total_tokens: number };
  /** Every vector as one row-major Float32Array (a view of the engine's output, not copied).
   * Not enumerable: absent from JSON.stringify. */
  readonly matrix: { data: Float32Array; rows: number; dims: number };
}

export interface EmbeddingCreateParams<F extends EmbeddingEncoding = 'float'> {
  model: string;
  /** A string or an array of strings (token-id arrays are rejected). */
  input: string | Array<string>;
  dimensions?: number;
  encoding_format?: F;
  user?: string;
}

/** An entry of ingle's model catalog (`client.models.catalog()`). */
export interface CatalogEntry {
  tag: string;
  kind: string;
  description: string;
  licence: string;
  size: number;
  cached: boolean;
  requires: string[];
  /** Left out of `ingle pull --all` (a large model for benchmarks and opt-in tests). */
  optional: boolean;
}

/** One progress event of `client.models.pull`. */
export interface PullProgress {
  /** `waiting`: for another pull of the same file to end; `verifying`: hashing a file. */
  status: 'waiting' | 'verifying' | 'downloading' | 'success';
  tag: string;
  /** A path inside the models directory (not on `success`). */
  file?: string;
  completed: number;
  total: number;
}

/** What `client.models.pull` did: every file, downloaded or already there, all verified. */
export interface PullResult {
  tag: string;
  status: 'success';
  models_dir: string;
  files: { tag: string; path: string; size: number; sha256: string; fetched: boolean }[];
  downloaded_bytes: number;
  /** What to know: a Hugging Face repo's vision projector left aside, a cached copy used. */
  notes: string[];
}

export interface Model {
  id: string;
  created: number;
  object: 'model';
  owned_by: string;
  /** Tokens its context holds (a loaded chat model's; a predictor's `ChatMessages`'s). */
  context_length?: number;
}

export interface ModelsPage {
  object: 'list';
  data: Array<Model>;
  [Symbol.asyncIterator](): AsyncIterator<Model>;
}

export interface Prediction {
  id: string;
  tag: string;
  created: number;
  /** In the order of the predictor's signature outputs; null when it failed. */
  results: Array<unknown> | null;
  /** Milliseconds from the start of the prediction to this (partial) result. */
  latency: number;
  error: { message: string; type: string; param: string | null; code: string | null } | null;
  logs: string | null;
}

export type ChatCompletionRole = 'system' | 'developer' | 'user' | 'assistant' | 'tool';

export interface ChatCompletionMessageParam {
  role: ChatCompletionRole;
  /** May be null on an assistant message that has `tool_calls`. */
  content: string | Array<{ type: 'text'; text: string }> | null;
  name?: string;
  /** On a `tool` message: the call it answers. */
  tool_call_id?: string;
  /** On an `assistant` message: the calls it made. */
  tool_calls?: Array<ChatCompletionMessageToolCall>;
}

/** A function the model may call; `parameters` is a JSON schema. */
export interface ChatCompletionTool {
  type: 'function';
  function: { name: string; description?: string; parameters?: Record<string, unknown>; strict?: boolean | null };
}

export type ChatCompletionToolChoiceOption =
  | 'none'
  | 'auto'
  | 'required'
  | { type: 'function'; function: { name: string } };

export type ResponseFormat =
  | { type: 'text' }
  | { type: 'json_object' }
  | {
      type: 'json_schema';
      json_schema: { name: string; schema?: Record<string, unknown>; strict?: boolean | null; description?: string };
    };

interface SamplingParams {
  model: string;
  max_tokens?: number | null;
  temperature?: number | null;
  top_p?: number | null;
  seed?: number | null;
  stop?: string | Array<string> | null;
  frequency_penalty?: number | null;
  presence_penalty?: number | null;
  /** llama.cpp's sampling extensions; left out, the model's recommended sampling applies. */
  top_k?: number | null;
  min_p?: number | null;
  repetition_penalty?: number | null;
  /** llama.cpp's server's name for `repetition_penalty`. */
  repeat_penalty?: number | null;
  /** Choices to generate, 1 to 8 (streamed interleaved, each with its `index`). */
  n?: number | null;
  /** Token id → bias from -100 to 100; -100 bans the token. */
  logit_bias?: Record<string, number> | null;
  stream_options?: { include_usage?: boolean } | null;
  user?: string;
  /** Other OpenAI parameters are accepted by type and checked by the engine. */
  [parameter: string]: unknown;
}

export interface ChatCompletionCreateParams extends SamplingParams {
  /** Extra variables for the model's Jinja chat template (`{ enable_thinking: false }`...). */
  chat_template_kwargs?: Record<string, unknown> | null;
  messages: Array<ChatCompletionMessageParam>;
  max_completion_tokens?: number | null;
  tools?: Array<ChatCompletionTool>;
  tool_choice?: ChatCompletionToolChoiceOption;
  parallel_tool_calls?: boolean;
  /** ingle's: a tool call may repeat one made earlier (by default a repeat within the reply ends
   * it, and a call already answered since the user last spoke is dropped; docs/tools.md). */
  allow_repeated_tool_calls?: boolean;
  /** JSON output, enforced by a grammar; a schema keyword that cannot be enforced is an error. */
  response_format?: ResponseFormat;
  logprobs?: boolean | null;
  /** 0 to 20; needs `logprobs: true`. */
  top_logprobs?: number | null;
  stream?: boolean | null;
}
export interface ChatCompletionCreateParamsNonStreaming extends ChatCompletionCreateParams {
  stream?: false | null;
}
export interface ChatCompletionCreateParamsStreaming extends ChatCompletionCreateParams {
  stream: true;
}

export interface CompletionCreateParams extends SamplingParams {
  prompt: string | Array<string>;
  /** Report this many (0 to 5) alternatives with each token's log probability. */
  logprobs?: number | null;
  stream?: boolean | null;
}
export interface CompletionCreateParamsNonStreaming extends CompletionCreateParams {
  stream?: false | null;
}
export interface CompletionCreateParamsStreaming extends CompletionCreateParams {
  stream: true;
}

/** Checked before anything starts: a `signal` that is not an AbortSignal, or options that are
 * not an object, throw OpenAIError. `null` means none. */
export interface RequestOptions {
  /** Aborting it stops generation; the call or the stream then throws APIUserAbortError. */
  signal?: AbortSignal | null;
  /** openai's other request options (headers, timeout, ...) are accepted and ignored. */
  [option: string]: unknown;
}

export declare class Stream<Item> implements AsyncIterable<Item> {
  /** `stream.controller.abort()` stops generation. */
  controller: AbortController;
  [Symbol.asyncIterator](): AsyncIterator<Item>;
}

/** Checked by the constructor: a wrong-typed option throws OpenAIError naming it. */
export interface ClientOptions {
  /** An ingle TOML config file, the config as TOML text, or the config as an object
   * (`{ predictors: [...] }`). Default: $INGLE_CONFIG, else the default model. */
  config?: string | Record<string, unknown> | null;
  /** Where relative model paths resolve. */
  modelsDir?: string | null;
  /** Predictors of your own to serve (see `predictor`). */
  predictors?: Predictor[];
  /** The openai client's connection options (apiKey, baseURL, timeout, ...) are ignored. */
  [option: string]: unknown;
}


/** Every method checks its arguments before any work starts and rejects (the constructor
 * throws) with an OpenAIError: a request JSON cannot carry faithfully (NaN or ±Infinity, a
 * BigInt, a function or symbol, `undefined` as an array item, a circular structure, a Map, Set
 * or typed array, a string with a lone UTF-16 surrogate, nesting deeper than 100 levels), a
 * body that is not an object or a wrong-typed argument is a BadRequestError (status 400,
 * `param` the field at fault, e.g. `messages[0].content`); a bad client or request option is
 * an OpenAIError naming it. `undefined` as an object's property means the property is absent. */
export declare class OpenAI {
  constructor(options?: ClientOptions);
  chat: {
    completions: {
      create(body: ChatCompletionCreateParamsNonStreaming, options?: RequestOptions | null): Promise<ChatCompletion>;
      create(body: ChatCompletionCreateParamsStreaming, options?: RequestOptions | null): Promise<Stream<ChatCompletionChunk>>;
      create(body: ChatCompletionCreateParams, options?: RequestOptions | null): Promise<ChatCompletion | Stream<ChatCompletionChunk>>;
      /** The prompt `create(body)` would decode from, rendered by the model's chat template. */
      render(body: Omit<ChatCompletionCreateParams, 'model'> & { model?: string }, options?: RequestOptions | null): Promise<string>;
    };
  };
  /** OpenAI's Responses API on the chat models (your own predictors' too). Responses are
   * stored (SQLite, see the README) unless `store: false`, so `previous_response_id` continues a
   * conversation, in this process or the next, reusing its KV cache. */
  responses: {
    create(body: ResponseCreateParamsNonStreaming, options?: RequestOptions | null): Promise<Response>;
    create(body: ResponseCreateParamsStreaming, options?: RequestOptions | null): Promise<Stream<ResponseStreamEvent>>;
    create(body: ResponseCreateParams, options?: RequestOptions | null): Promise<Response | Stream<ResponseStreamEvent>>;
    /** The events and `finalResponse()`, as openai's helper. */
    stream(body: ResponseCreateParams, options?: RequestOptions | null): ResponseStream;
    /** A whole response with `output_parsed`: the text read as JSON (`text.format`
     * `json_schema` or `json_object`; through openai's `zodTextFormat` parser when given one). */
    parse<T = unknown>(body: ResponseCreateParamsNonStreaming, options?: RequestOptions | null): Promise<ParsedResponse<T>>;
    retrieve(responseId: string): Promise<Response>;
    /** Forgets a stored response; NotFoundError if there is none. */
    delete(responseId: string): Promise<void>;
    inputTokens: {
      /** How many input tokens `create(body)` would take, read by the model itself. */
      count(body: ResponseCreateParams, options?: RequestOptions | null): Promise<{ object: 'response.input_tokens'; input_tokens: number }>;
    };
    inputItems: {
      /** Awaitable for a page, and iterable over every item (as openai's CursorPage). */
      list(
        responseId: string,
        query?: { after?: string; limit?: number; order?: 'asc' | 'desc' } | null,
      ): Promise<ResponseItemList> & AsyncIterable<ResponseItem>;
    };
  };
  completions: {
    create(body: CompletionCreateParamsNonStreaming, options?: RequestOptions | null): Promise<Completion>;
    create(body: CompletionCreateParamsStreaming, options?: RequestOptions | null): Promise<Stream<Completion>>;
    create(body: CompletionCreateParams, options?: RequestOptions | null): Promise<Completion | Stream<Completion>>;
  };
  embeddings: {
    create<F extends EmbeddingEncoding = 'float'>(
      body: EmbeddingCreateParams<F>,
      options?: RequestOptions | null,
    ): Promise<CreateEmbeddingResponse<F>>;
  };
  rerank: {
    /** Documents ranked by relevance to the query (Jina's and Cohere's rerank shape). */
    create(body: RerankCreateParams, options?: RequestOptions | null): Promise<RerankResponse>;
  };
  images: {
    /** Images made by a predictor annotated ImageWidth, ImageHeight or ImageCount, each as
     * `b64_json`; `stream: true`: its `image_generation.partial_image` events (a generator's
     * yields before its last, up to `partial_images`), then `image_generation.completed`. */
    generate(body: ImageGenerateParamsNonStreaming, options?: RequestOptions | null): Promise<ImagesResponse>;
    generate(body: ImageGenerateParamsStreaming, options?: RequestOptions | null): Promise<Stream<ImageGenStreamEvent>>;
    generate(body: ImageGenerateParams, options?: RequestOptions | null): Promise<ImagesResponse | Stream<ImageGenStreamEvent>>;
  };
  audio: {
    speech: {
      /** Resolves, once the first sentence is synthesised, to a fetch `Response` (as openai's
       * does): `content-type` is the format's (`audio/mpeg`, `audio/ogg`, `audio/aac`,
       * `audio/flac`, `audio/wav`, `audio/pcm`; `text/event-stream` for `stream_format: 'sse'`).
       * Its `body` delivers the audio sentence by sentence as it is synthesised, in the
       * streaming forms of the formats (as the OpenAI API sends them: wav and flac headers do
       * not know the length); `arrayBuffer()` waits for all of it. A bad request rejects with
       * BadRequestError naming the field (`input`, `voice`, `speed`, `response_format`, ...).
       * Aborting `options.signal`, or `response.body.cancel()`, stops synthesis before the next
       * sentence; after an abort, reading the body throws APIUserAbortError. */
      create(body: SpeechCreateParams, options?: RequestOptions | null): Promise<globalThis.Response>;
    };
    transcriptions: {
      /** Transcribes `file` on the libuv thread pool. `json` (default) resolves to
       * `{ text, usage }`, `verbose_json` to `{ task, language, duration, text, segments, words,
       * usage }`, `text`, `srt` and `vtt` to a string, as openai's do. `stream: true` resolves,
       * once the audio is decoded, to a Stream of `transcript.text.delta` events (one per
       * segment) and a last `transcript.text.done`. A bad request rejects with BadRequestError
       * naming the field (`file`, `file.sample_rate`, `language`, `response_format`,
       * `timestamp_granularities`, `include`, ...). Aborting `options.signal` rejects (the
       * stream throws) APIUserAbortError and stops the work before the next segment. */
      create(body: TranscriptionCreateParamsNonStreaming<'json' | undefined>, options?: RequestOptions | null): Promise<Transcription>;
      create(body: TranscriptionCreateParamsNonStreaming<'verbose_json'>, options?: RequestOptions | null): Promise<TranscriptionVerbose>;
      create(body: TranscriptionCreateParamsNonStreaming<'srt' | 'vtt' | 'text'>, options?: RequestOptions | null): Promise<string>;
      create(body: TranscriptionCreateParamsStreaming, options?: RequestOptions | null): Promise<Stream<TranscriptionStreamEvent>>;
      create(
        body: TranscriptionCreateParams,
        options?: RequestOptions | null,
      ): Promise<Transcription | TranscriptionVerbose | string | Stream<TranscriptionStreamEvent>>;
    };
    translations: {
      /** Translates the speech of `file` into English on the libuv thread pool, with a
       * multilingual model (`@local/whisper-base`, or a predictor with an input annotated
       * TranscriptionTask). `json` (default) resolves to `{ text }`, `verbose_json` to
       * `{ task: 'translate', language: 'english', duration, text, segments }`, `text`, `srt` and
       * `vtt` to a string, as openai's do. It does not stream. The English-only
       * `@local/whisper-tiny-en` rejects with BadRequestError naming `model` (after checking
       * `file`); a bad request names the field. Aborting `options.signal` rejects with
       * APIUserAbortError. */
      create(body: TranslationCreateParams<'json' | undefined>, options?: RequestOptions | null): Promise<Translation>;
      create(body: TranslationCreateParams<'verbose_json'>, options?: RequestOptions | null): Promise<TranslationVerbose>;
      create(body: TranslationCreateParams<'srt' | 'vtt' | 'text'>, options?: RequestOptions | null): Promise<string>;
      create(body: TranslationCreateParams, options?: RequestOptions | null): Promise<Translation | TranslationVerbose | string>;
    };
  };
  models: {
    /** Awaitable for the page, and iterable: `for await (const m of client.models.list())`. */
    list(): Promise<ModelsPage> & AsyncIterable<Model>;
    retrieve(model: string): Promise<Model>;
    /** What `pull` can download, with sizes and whether each is in the models directory. */
    catalog(): Promise<CatalogEntry[]>;
    /** Downloads `model` (a tag of ingle's catalog) and what it needs into the models
     * directory, verified and atomic; an interrupted pull resumes. ingle's own method. */
    pull(
      model: string,
      options?: { onProgress?: (event: PullProgress) => void; signal?: AbortSignal } | null,
    ): Promise<PullResult>;
    /** Frees the model's memory (weights, KV cache, threads); the next request loads it
     * again. Resolves to whether it was loaded. ingle's own method. */
    unload(model: string): Promise<boolean>;
    /** Whether the model is in memory now. */
    isLoaded(model: string): Promise<boolean>;
  };
  predictions: {
    /** `options.signal` aborts it (and the predictor's `predictionSignal()`). */
    create(body: { tag: string; inputs?: Record<string, unknown> }, options?: RequestOptions | null): Promise<Prediction>;
    /** Errors, a bad argument's too, are thrown by the iteration. */
    stream(body: { tag: string; inputs?: Record<string, unknown> }, options?: RequestOptions | null): Stream<Prediction>;
  };
  /** Text to token ids with a text model's own tokenizer (llama.cpp server's `/tokenize`). */
  tokenize(body: TokenizeParams & { with_pieces: true }, options?: RequestOptions | null): Promise<TokenizeResponse<true>>;
  tokenize(body: TokenizeParams & { with_pieces?: false }, options?: RequestOptions | null): Promise<TokenizeResponse<false>>;
  tokenize(body: TokenizeParams, options?: RequestOptions | null): Promise<TokenizeResponse>;
  /** Token ids back to text (llama.cpp server's `/detokenize`). */
  detokenize(body: DetokenizeParams, options?: RequestOptions | null): Promise<DetokenizeResponse>;
  /** Load figures of a model (ingle's own). */
  metrics(model: string): Promise<Metrics>;
  /** Serve functions of your own through every method above. */
  predictors: {
    register(...predictors: Predictor[]): void;
  };
}

/** The base of every error ingle reports; itself for a bad client or request option, as in openai. */
export declare class OpenAIError extends Error {}
export declare class APIError extends OpenAIError {
  /** The HTTP status the OpenAI API would answer with. */
  readonly status: number | undefined;
  /** The OpenAI error object. */
  readonly error: { message: string; type: string; param: string | null; code: string | null } | undefined;
  readonly code: string | null | undefined;
  /** The request parameter at fault, e.g. `messages[0].role`. */
  readonly param: string | null | undefined;
  readonly type: string | undefined;
}
export declare class BadRequestError extends APIError {}
export declare class NotFoundError extends APIError {}
export declare class InternalServerError extends APIError {}
export declare class APIUserAbortError extends APIError {}

// --- Predictors of your own -----------------------------------------------------------------

export type ParameterType = 'string' | 'integer' | 'number' | 'boolean' | 'array' | 'object' | 'tensor' | 'audio';

/** Fields every parameter takes: its name, and what the engine checks of its values. */
export interface ParameterOptions {
  name: string;
  description?: string;
  type?: ParameterType;
  /** Makes the parameter optional, with this value when left out. */
  default?: unknown;
  /** `false`: optional without a default (left out of the inputs). */
  required?: boolean;
  min?: number;
  max?: number;
  /** The values it may take. */
  choices?: Array<string | number | boolean>;
  /** The type of an array's items. */
  items?: Exclude<ParameterType, 'tensor' | 'audio'>;
}

/** A parameter with its annotation, made by one of `Parameter`'s functions. */
export interface PredictorParameter extends ParameterOptions {
  readonly annotation: string;
}

type Annotated<Extra = {}> = (options: ParameterOptions & Extra) => PredictorParameter;

/** The annotations of predictor parameters: what each means to the OpenAI methods, which find
 * parameters by annotation, never by name. */
export declare const Parameter: {
  Generic: Annotated;
  Numeric: Annotated;
  /** The texts to embed (an array of strings), or the embedding matrix out (rows). */
  Embedding: Annotated;
  /** `dimensions`: an integer with a default. */
  EmbeddingDims: Annotated<{ max: number; min?: number }>;
  /** `voice`: required; one of `voices`. */
  AudioVoice: Annotated<{ voices: string[] }>;
  /** `speed`: a number with a default. */
  AudioSpeed: Annotated<{ min?: number; max?: number }>;
  /** Audio in (a Float32Array of mono samples at `sample_rate`) or out. */
  Audio: Annotated<{ sample_rate: number }>;
  /** `language` in; out, the language heard (`verbose_json`'s `language`). */
  TranscriptionLanguage: Annotated;
  TranscriptionPrompt: Annotated;
  /** `'transcribe'` or `'translate'` (into English): with it, serves `audio.translations`. */
  TranscriptionTask: Annotated;
  TranscriptionWordTimestamps: Annotated;
  TranscriptionSegment: Annotated;
  /** The chat messages (`messages`): makes the predictor a chat predictor. A message with images
   * or audio has an array of parts: `{ type: 'text', text }`, `{ type: 'image', detail? }`,
   * `{ type: 'audio' }`. `context_length`: tokens the model holds (`models` reports it). */
  ChatMessages: Annotated<{ context_length?: number }>;
  /** The images of the chat's image parts, in order: `{ data: Uint8Array, dtype: 'uint8',
   * shape: [H, W, C] }` each (C = 3, RGB, or 4, RGBA). */
  ChatImages: Annotated;
  /** The audio of the chat's audio parts, in order: a Float32Array of mono samples at
   * `sample_rate` each. */
  ChatAudios: Annotated<{ sample_rate: number }>;
  /** `reasoning_effort` (a string: none, minimal, low, medium, high, xhigh), with a default. */
  ReasoningEffort: Annotated;
  /** Thinking since the previous output (an output string), shown apart from the answer. A
   * chat predictor yields it as a chunk's `delta.reasoning_content`. */
  ReasoningDelta: Annotated;
  /** The text to continue (`completions`' `prompt`). */
  Prompt: Annotated;
  MaxTokens: Annotated;
  Temperature: Annotated;
  TopP: Annotated;
  Stop: Annotated;
  Seed: Annotated;
  FrequencyPenalty: Annotated;
  PresencePenalty: Annotated;
  /** llama.cpp's sampling extensions: `top_k` (integer), `min_p` (number),
   * `repetition_penalty` (number; `repeat_penalty` in a request), `chat_template_kwargs` (object). */
  TopK: Annotated;
  MinP: Annotated;
  RepetitionPenalty: Annotated;
  ChatTemplateKwargs: Annotated;
  /** `tools` (array), `tool_choice` (always an object: `{ type: 'auto' }`...),
   * `parallel_tool_calls` (boolean), `allow_repeated_tool_calls` (boolean), `response_format`
   * (object), `logprobs` (integer: how many alternatives), `logit_bias` (object). */
  Tools: Annotated;
  /** Muna's name for `Tools`. */
  ChatTools: Annotated;
  ToolChoice: Annotated;
  ParallelToolCalls: Annotated;
  AllowRepeatedToolCalls: Annotated;
  ResponseFormat: Annotated;
  Logprobs: Annotated;
  LogitBias: Annotated;
  TextDelta: Annotated;
  FinishReason: Annotated;
  Usage: Annotated;
  /** Outputs: tool-call deltas as OpenAI streams them, and `{token, logprob, bytes, top_logprobs}`
   * per token. */
  ToolCalls: Annotated;
  TokenLogprobs: Annotated;
  /** Rerank: the query (a string) and the documents (an array of strings) in, one score per
   * document out (an array of numbers, higher is more relevant); the three make the predictor
   * serve `rerank.create`. */
  RerankQuery: Annotated;
  RerankDocuments: Annotated;
  RerankScores: Annotated;
  /** Images: the width and height in pixels (`size`) and how many (`n`), integers; with a
   * string prompt in and `{ data: Uint8Array, shape: [H, W, C] }` images out (C = 1, 3 or 4;
   * `[N, H, W, C]`, or a list of them) the predictor serves `images.generate`. */
  ImageWidth: Annotated;
  ImageHeight: Annotated;
  ImageCount: Annotated;
};

/** Muna's names for the annotations of `Parameter` (`muna.beta.Annotations`), so that a
 * declaration written with them needs only its imports changed. `MaxOutputTokens` is
 * `MaxTokens`, `SamplingProbability` (and `TopP`) is `TopP`, `SamplingTemperature` (and
 * `Temperature`) is `Temperature`, `StopSequences` is `Stop`, `ChatTools` is `Tools`;
 * `EmbeddingDims` without `max` takes its default as `max`; `ChatImages`, `ChatAudios` and
 * `ReasoningEffort` are `Parameter`'s of the same names. */
export declare const beta: {
  readonly Annotations: {
    readonly AudioSpeed: Annotated<{ min?: number; max?: number }>;
    readonly AudioVoice: Annotated<{ voices: string[] }>;
    readonly ChatAudios: Annotated<{ sample_rate: number }>;
    readonly ChatImages: Annotated;
    readonly ChatMessages: Annotated<{ context_length?: number }>;
    readonly ChatTools: Annotated;
    readonly EmbeddingDims: Annotated<{ max?: number; min?: number }>;
    readonly FrequencyPenalty: Annotated;
    readonly ImageCount: Annotated;
    readonly ImageHeight: Annotated;
    readonly ImageWidth: Annotated;
    readonly MaxOutputTokens: Annotated;
    readonly PresencePenalty: Annotated;
    readonly ReasoningEffort: Annotated;
    readonly ResponseFormat: Annotated;
    readonly SamplingProbability: Annotated;
    readonly SamplingTemperature: Annotated;
    readonly TopP: Annotated;
    readonly Temperature: Annotated;
    readonly Seed: Annotated;
    readonly StopSequences: Annotated;
    readonly TranscriptionLanguage: Annotated;
    readonly TranscriptionPrompt: Annotated;
    readonly TranscriptionTask: Annotated;
  };
};

/** What a predictor's function may return or yield: JSON values, audio (a Float32Array of mono
 * samples, `{ samples, channels }` interleaved, or `{ data, shape }` / an array of Float32Array
 * rows, `[frames, channels]` or `[channels, frames]` as the shape decides), rows of numbers
 * (embeddings), or chat completion chunks (a chat predictor). */
export type PredictorValue = unknown;

export type PredictorFunction =
  | ((inputs: Record<string, any>) => PredictorValue | Promise<PredictorValue>)
  | ((inputs: Record<string, any>) => Iterator<PredictorValue> | AsyncIterator<PredictorValue>);

export interface PredictorSpec {
  /** The model name it is served as, e.g. `"@me/echo"`. */
  tag: string;
  description?: string;
  /** `"generator"` when `fn` returns an iterator without being a generator function. */
  kind?: 'eager' | 'generator';
  inputs?: PredictorParameter[];
  /** Required unless it is a chat predictor (an input annotated ChatMessages or Prompt). */
  outputs?: PredictorParameter[];
}

/** A function made a predictor: register it with `client.predictors.register`. */
export interface Predictor {
  readonly tag: string;
  readonly declaration: string;
}

/** Declares `fn` a predictor. Throws a PredictorDefinitionError naming the parameter when the
 * declaration breaks a rule of the OpenAI method it serves. */
export declare function predictor(spec: PredictorSpec, fn: PredictorFunction): Predictor;
/** Inside a predictor (across its awaits): the AbortSignal of its prediction, aborted once the
 * call is cancelled (the caller's signal, a stream closed before its end), never after it
 * ended. `undefined` outside a predictor. */
export declare function predictionSignal(): AbortSignal | undefined;

export declare class PredictorDefinitionError extends TypeError {
  readonly functionName: string;
  readonly param: string | null | undefined;
}

/** The version of ingle. */
export declare const version: string;
/** What ingle runs with on this machine. */
/** Loads llama.cpp's CPU backend if it is not yet, and says what ingle runs with. */
export declare function systemInfo(): SystemInfo;

export default OpenAI;
