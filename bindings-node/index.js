'use strict';
// ingle: open AI models in this Node process, behind the interface of the `openai` package.
// Only conversion happens here: arguments become the OpenAI JSON request, the native addon runs
// it in the Rust core (on the libuv thread pool), and the JSON it returns is parsed into plain
// objects with exactly the OpenAI shape.

const os = require('os');
const { NativeCancel, version, systemInfo: nativeSystemInfo } = require('./native.js');
const {
  Parameter, Annotations, predictor, PredictorDefinitionError, predictionSignal,
} = require('./predictors.js');
const {
  OpenAIError, APIError, BadRequestError, NotFoundError, InternalServerError, APIUserAbortError, call,
  callSync,
} = require('./errors.js');
const {
  badRequest, badOption, describe, isObject, toJson, requestBody, requestOptions,
  stringArgument, checkSignal,
} = require('./request.js');
const { Stream, abortable, create, abortableStart, speechResponse } = require('./streams.js');
const { FILE_KINDS, audioRequest } = require('./uploads.js');
const { Responses, ResponseStream } = require('./responses.js');
const { openClient } = require('./client.js');
const { Anthropic, MessageStream } = require('./anthropic.js');

class ChatCompletions {
  constructor(native) {
    this._native = native;
  }

  /** `body`: `model`, `messages` and the OpenAI chat parameters. */
  create(body, options) {
    const native = this._native;
    return create('chat.completions.create', (json) => native.stream('chat.completions.stream', json),
      (json, cancel) => native.call('chat.completions.create', json, cancel), body, options);
  }

  /** The prompt `create(body)` would decode from: the model's chat template's rendering (tools
   * and `chat_template_kwargs` included), generating nothing (llama.cpp server's `/apply-template`). */
  async render(body, options) {
    return (await callMethod(this._native, 'apply_template', body, options)).prompt;
  }
}

class Completions {
  constructor(native) {
    this._native = native;
  }

  /** `body`: `model`, `prompt` and the OpenAI completion parameters. */
  create(body, options) {
    const native = this._native;
    return create('completions.create', (json) => native.stream('completions.stream', json),
      (json, cancel) => native.call('completions.create', json, cancel), body, options);
  }
}

/** The OpenAI embeddings response from the engine's matrix; `matrix` (not enumerable, so not
 * in the JSON) keeps the vectors as one Float32Array view of the engine's output. */
function embeddingResponse({ model, rows, dims, promptTokens, base64, data }) {
  const list = [];
  for (let i = 0; i < rows; i++) {
    const row = data.subarray(i * dims, (i + 1) * dims);
    list.push({ object: 'embedding', index: i, embedding: base64 ? base64LE(row) : Array.from(row) });
  }
  const response = {
    object: 'list',
    data: list,
    model,
    usage: { prompt_tokens: promptTokens, total_tokens: promptTokens },
  };
  Object.defineProperty(response, 'matrix', { value: { data, rows, dims }, enumerable: false });
  return response;
}

/** Base64 of float32 values as little-endian bytes (OpenAI's `encoding_format: 'base64'`). */
function base64LE(floats) {
  const bytes = Buffer.from(floats.buffer, floats.byteOffset, floats.byteLength);
  if (os.endianness() === 'LE') return bytes.toString('base64');
  return Buffer.from(bytes).swap32().toString('base64'); // a copy, swapped to little-endian
}

class Embeddings {
  constructor(native) {
    this._native = native;
  }

  /** `body`: `model`, `input` (a string or an array of strings), `dimensions`,
   * `encoding_format` ('float' or 'base64'), `user`. The result has the OpenAI shape, and
   * `result.matrix` is `{ data: Float32Array, rows, dims }`: every vector, row-major, uncopied. */
  async create(body, options) {
    const { signal } = requestOptions(options, 'embeddings.create');
    const json = toJson(requestBody(body, 'embeddings.create'));
    checkSignal(signal);
    return embeddingResponse(await call(() => this._native.call('embeddings.create', json)));
  }
}

class Images {
  constructor(native) {
    this._native = native;
  }

  /** `body`: `model`, `prompt`, `n`, `size` ('WIDTHxHEIGHT' or 'auto'), `output_format` ('png',
   * 'jpeg', 'webp'), `output_compression`, `background`, `quality`, `partial_images`, `stream`.
   * Images made by a predictor annotated ImageWidth, ImageHeight or ImageCount, as `b64_json`;
   * `stream: true` gives a Stream of `image_generation.partial_image` and
   * `image_generation.completed` events. */
  generate(body, options) {
    const native = this._native;
    return create('images.generate', (json) => native.stream('images.stream', json),
      (json, cancel) => native.call('images.generate', json, cancel), body, options);
  }
}

class Rerank {
  constructor(native) {
    this._native = native;
  }

  /** `body`: `model`, `query`, `documents` (strings, or `{ text }` objects), `top_n`,
   * `return_documents` (default true). Resolves to `{ id, model, results: [{ index,
   * relevance_score, document: { text } }], usage }`, most relevant first (Jina's and Cohere's
   * rerank shape). An embedding model scores by cosine similarity; a predictor annotated
   * RerankQuery, RerankDocuments and RerankScores scores itself. */
  async create(body, options) {
    return callMethod(this._native, 'rerank.create', body, options);
  }
}

/** A method of the core's table that answers with one JSON object, by its name: `body` checked
 * and sent as JSON, the answer parsed; `options.signal` aborts it. */
async function callMethod(native, method, body, options) {
  const { signal } = requestOptions(options, method);
  const json = toJson(requestBody(body, method));
  return JSON.parse(await abortable((cancel) => native.call(method, json, cancel), signal));
}

class Speech {
  constructor(native) {
    this._native = native;
  }

  /** `body`: `model`, `input`, `voice` (one of the model's voices, or an OpenAI voice name),
   * `response_format` ('mp3', 'opus', 'aac', 'flac', 'wav', 'pcm'), `speed` (0.25 to 4),
   * `stream_format` ('audio' or 'sse'), `instructions`. Resolves to a fetch `Response`, as
   * openai's does, once the first sentence is synthesised: `await response.arrayBuffer()` for
   * the whole file, or read `response.body` to get the audio as it is made. A bad request
   * rejects with BadRequestError naming the field; `options.signal` stops synthesis. */
  async create(body, options) {
    const { signal } = requestOptions(options, 'audio.speech.create');
    const json = toJson(requestBody(body, 'audio.speech.create'));
    checkSignal(signal);
    // The cancel stops the start too: an abort during the first sentence ends its synthesis.
    const cancel = new NativeCancel();
    const start = call(() => this._native.stream('audio.speech.stream', json, cancel));
    const native = await abortableStart(start, signal, cancel);
    if (signal && signal.aborted) {
      native.close();
      throw new APIUserAbortError();
    }
    return speechResponse(native, signal);
  }
}

// A transcription's (or translation's) body in the `response_format` asked for: JSON for `json`
// (the default) and `verbose_json`, else the text itself.
function transcriptionResult(body, responseFormat) {
  const format = responseFormat == null ? 'json' : responseFormat;
  return format === 'json' || format === 'verbose_json' ? JSON.parse(body) : body;
}

class Transcriptions {
  constructor(native) {
    this._native = native;
  }

  /** `body`: `model`, `file` (see FILE_KINDS), `language`, `prompt`, `response_format` ('json',
   * 'text', 'srt', 'verbose_json', 'vtt'), `temperature`, `timestamp_granularities`, `stream`.
   * `stream: true` resolves to a Stream of `transcript.text.delta` events and a last
   * `transcript.text.done`. `options.signal` stops the work before the next segment. */
  async create(body, options) {
    const { signal, json, audio, stream, format } = await audioRequest(body, options, 'audio.transcriptions.create', true);
    const native = this._native;
    if (stream) {
      // The cancel stops the start too: an abort while the upload decodes ends the decoding.
      const cancel = new NativeCancel();
      const start = call(() => native.stream('audio.transcriptions.stream', json, cancel, audio));
      const started = await abortableStart(start, signal, cancel);
      if (signal && signal.aborted) {
        started.close();
        throw new APIUserAbortError();
      }
      return new Stream(Promise.resolve(started), signal);
    }
    const text = await abortable((cancel) => native.call('audio.transcriptions.create', json, cancel, audio), signal);
    return transcriptionResult(text, format);
  }
}

class Translations {
  constructor(native) {
    this._native = native;
  }

  /** Speech in any language to English text, on a multilingual model (`@local/whisper-base`:
   * Whisper's translate task). `body` as transcriptions.create's, without `stream` (it does
   * not stream): `model`, `file`, `prompt`, `response_format` (`json` resolves to `{ text }`,
   * `verbose_json` to `{ task: 'translate', language: 'english', duration, text, segments }`,
   * `text`, `srt` and `vtt` to a string), `temperature`, and ingle's `language` (the audio's:
   * detection is skipped) and `timestamp_granularities`. The English-only
   * `@local/whisper-tiny-en` cannot translate: it rejects with BadRequestError naming `model`. */
  async create(body, options) {
    const { signal, json, audio, format } = await audioRequest(body, options, 'audio.translations.create', false);
    const text = await abortable((cancel) => this._native.call('audio.translations.create', json, cancel, audio), signal);
    return transcriptionResult(text, format);
  }
}

class Models {
  constructor(native) {
    this._native = native;
  }

  /** Awaitable (`(await client.models.list()).data`) and iterable
   * (`for await (const model of client.models.list())`), like openai's PagePromise. */
  list() {
    const page = (async () => {
      const list = JSON.parse(await call(() => this._native.call('models.list', '{}')));
      list[Symbol.asyncIterator] = async function* iterate() {
        yield* list.data;
      };
      Object.defineProperty(list, Symbol.asyncIterator, { enumerable: false });
      return list;
    })();
    page[Symbol.asyncIterator] = async function* iterate() {
      yield* (await page).data;
    };
    return page;
  }

  /** Downloads `model` (a tag of ingle's catalog: `ingle models` lists them; or a Hugging Face
   * reference, `hf.co/ORG/REPO[:QUANT][@REVISION]`, into the Hub's shared cache) and what it needs
   * into the models directory, each file verified (sha256) and written atomically; an
   * interrupted pull resumes. Files already there are re-hashed, a corrupted one fetched again;
   * the model is then served by this client. Resolves to `{tag, status, models_dir, files:
   * [{tag, path, size, sha256, fetched}], downloaded_bytes, notes}`. `options.onProgress(event)`
   * receives `{status: 'waiting'|'verifying'|'downloading'|'success', tag, file, completed,
   * total}`;
   * `options.signal` aborts (APIUserAbortError; the next pull resumes). ingle's own method, as
   * Ollama's pull: OpenAI's models are not downloaded. */
  async pull(model, options) {
    stringArgument(model, 'model', 'models.pull(model, options)');
    const { signal } = requestOptions(options, 'models.pull');
    const onProgress = options ? options.onProgress : undefined;
    if (onProgress !== undefined && onProgress !== null && typeof onProgress !== 'function') {
      throw badOption(`models.pull(model, options): options.onProgress must be a function, not ${describe(onProgress)}`);
    }
    // A callback that throws stops the pull, which then rejects with what it threw (it runs
    // on the main thread from native code, where a throw would be an uncaught exception).
    let thrown = null;
    let nativeCancel = null;
    const progress = onProgress
      ? (json) => {
          if (thrown) return;
          try {
            onProgress(JSON.parse(json));
          } catch (error) {
            thrown = { error };
            if (nativeCancel) nativeCancel.cancel();
          }
        }
      : null;
    const native = this._native;
    let report;
    try {
      report = await abortable((cancel) => {
        nativeCancel = cancel;
        return native.modelsPull(model, progress, cancel);
      }, signal);
    } catch (error) {
      throw thrown ? thrown.error : error;
    }
    if (thrown) throw thrown.error;
    return JSON.parse(report);
  }

  /** What `pull` can download: `[{tag, kind, description, licence, size, cached, requires}]`
   * (`cached`: its files are in the models directory). ingle's own method. */
  async catalog() {
    return JSON.parse(callSync(() => this._native.modelsCatalog()));
  }

  async retrieve(model) {
    stringArgument(model, 'model', 'models.retrieve(model)');
    return JSON.parse(await call(() => this._native.call('models.retrieve', toJson({ model }))));
  }

  /** Frees the model's memory (weights, KV cache, threads); the next request loads it again.
   * Requests running on it finish first. Resolves to whether it was loaded. ingle's own method. */
  async unload(model) {
    stringArgument(model, 'model', 'models.unload(model)');
    return callSync(() => this._native.modelsUnload(model));
  }

  /** Whether the model is in memory now. */
  async isLoaded(model) {
    stringArgument(model, 'model', 'models.isLoaded(model)');
    return callSync(() => this._native.modelsIsLoaded(model));
  }
}

class Predictions {
  constructor(native) {
    this._native = native;
  }

  /** Runs the predictor `tag` on named `inputs`: `{id, tag, created, results, latency, error, logs}`.
   * Invalid inputs reject; a predictor that fails while running gives a prediction with `error`
   * (and `logs`). */
  async create(body, options) {
    const { signal } = requestOptions(options, 'predictions.create');
    const { tag, inputs, buffers } = predictionArguments(body, 'predictions.create');
    return JSON.parse(await abortable((cancel) => this._native.predictionsCreate(tag, inputs, buffers, cancel), signal));
  }

  /** One prediction per partial result: `for await (const p of client.predictions.stream(...))`.
   * Every error, a bad argument's too, is thrown by the iteration. */
  stream(body, options) {
    let start;
    let signal;
    try {
      ({ signal } = requestOptions(options, 'predictions.stream'));
      const { tag, inputs, buffers } = predictionArguments(body, 'predictions.stream');
      start = call(() => this._native.predictionsStream(tag, inputs, buffers));
    } catch (err) {
      start = Promise.reject(err);
    }
    start.catch(() => {}); // reported when iterated
    return new Stream(start, signal);
  }
}

/** `{ tag, inputs, buffers }` of a prediction as the addon takes them: the tag, the inputs'
 * JSON, and the bytes of audio inputs (`{ samples: Float32Array, sample_rate, channels }`) and
 * tensor inputs (`{ data: TypedArray, shape }`), which the JSON refers to as `$raw` values. */
function predictionArguments(body, method) {
  const { tag, inputs = {} } = requestBody(body, method);
  stringArgument(tag, 'tag', method);
  if (!isObject(inputs)) {
    throw badRequest('inputs', `${method}: \`inputs\` must be an object of parameter names to values, not ${describe(inputs)}`);
  }
  const plain = {};
  const raw = {};
  const buffers = [];
  for (const [name, value] of Object.entries(inputs)) {
    if (isObject(value) && value.samples instanceof Float32Array) {
      const { samples, sample_rate: rate, channels = 1 } = value;
      if (!Number.isInteger(rate) || rate <= 0) throw badRequest(name, `${method}: \`inputs.${name}.sample_rate\` must be a positive integer`);
      buffers.push(new Uint8Array(samples.buffer, samples.byteOffset, samples.byteLength));
      raw[name] = { $raw: buffers.length - 1, kind: 'audio', sample_rate: rate, channels };
    } else if (isObject(value) && ArrayBuffer.isView(value.data) && Array.isArray(value.shape)) {
      const dtype = tensorDtype(value.data);
      if (!dtype) throw badRequest(name, `${method}: \`inputs.${name}.data\` is a ${value.data.constructor.name}; tensors are Float32Array, Int32Array, BigInt64Array, Int8Array or Uint8Array`);
      buffers.push(new Uint8Array(value.data.buffer, value.data.byteOffset, value.data.byteLength));
      raw[name] = { $raw: buffers.length - 1, kind: 'tensor', dtype, shape: value.shape };
    } else {
      plain[name] = value;
    }
  }
  const json = toJson(plain);
  if (buffers.length === 0) return { tag, inputs: json, buffers: null };
  return { tag, inputs: JSON.stringify({ ...JSON.parse(json), ...raw }), buffers };
}

function tensorDtype(data) {
  const dtypes = [[Float32Array, 'float32'], [Int32Array, 'int32'], [BigInt64Array, 'int64'], [Int8Array, 'int8'], [Uint8Array, 'uint8']];
  const found = dtypes.find(([Class]) => data instanceof Class);
  return found ? found[1] : null;
}

/** Runs models in this process. `config`: an ingle TOML config file, the config as TOML text, or
 * the config as an object (`{ predictors: [...] }`) (default: $INGLE_CONFIG, else the default model); `modelsDir`: where model files are. The openai client's connection
 * options (`apiKey`, `baseURL`, `timeout`, ...) are accepted and ignored. */
class OpenAI {
  constructor(options = {}) {
    openClient(this, options, 'OpenAI');
    this.chat = { completions: new ChatCompletions(this._native) };
    this.responses = new Responses(this._native);
    this.completions = new Completions(this._native);
    this.embeddings = new Embeddings(this._native);
    this.rerank = new Rerank(this._native);
    this.images = new Images(this._native);
    this.audio = {
      speech: new Speech(this._native),
      transcriptions: new Transcriptions(this._native),
      translations: new Translations(this._native),
    };
    this.models = new Models(this._native);
    this.predictions = new Predictions(this._native);
  }

  /** `body`: `model`, `content`, `add_special` (default false), `parse_special` (default
   * true), `with_pieces` (default false). Resolves to `{ tokens: [id, ...] }`, or with
   * `with_pieces` `{ tokens: [{ id, piece }, ...] }` (a piece that is not UTF-8 on its own is
   * its bytes): a text model's own tokenizer, as llama.cpp's server has it. */
  async tokenize(body, options) {
    return callMethod(this._native, 'tokenize', body, options);
  }

  /** `body`: `model`, `tokens` (ids). Resolves to `{ content }`, the text of the tokens. */
  async detokenize(body, options) {
    return callMethod(this._native, 'detokenize', body, options);
  }

  /** Load figures of a model: active_requests, queued_requests, generated_tokens, cancelled_requests. */
  async metrics(model) {
    stringArgument(model, 'model', 'metrics(model)');
    return JSON.parse(await call(() => this._native.metrics(model)));
  }
}

module.exports = OpenAI;
module.exports.OpenAI = OpenAI;
module.exports.default = OpenAI;
module.exports.Stream = Stream;
module.exports.ResponseStream = ResponseStream;
module.exports.Anthropic = Anthropic;
module.exports.MessageStream = MessageStream;
module.exports.AnthropicError = OpenAIError;
module.exports.OpenAIError = OpenAIError;
module.exports.APIError = APIError;
module.exports.BadRequestError = BadRequestError;
module.exports.NotFoundError = NotFoundError;
module.exports.InternalServerError = InternalServerError;
module.exports.APIUserAbortError = APIUserAbortError;
module.exports.version = version();
/** What ingle runs with here: its version and the CPU variant of llama.cpp's kernels loaded
 * for this machine (`cpu_variant`, with every variant's score). */
module.exports.systemInfo = () => JSON.parse(callSync(() => nativeSystemInfo()));
module.exports.Parameter = Parameter;
/** Muna's names (`muna.beta.Annotations`) for `Parameter`'s annotations. */
module.exports.beta = Object.freeze({ Annotations: Object.freeze(Annotations) });
module.exports.predictor = predictor;
module.exports.PredictorDefinitionError = PredictorDefinitionError;
module.exports.predictionSignal = predictionSignal;
