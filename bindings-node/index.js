'use strict';
// ingle: open AI models in this Node process, behind the interface of the `openai` package.
// Only conversion happens here: arguments become the OpenAI JSON request, the native addon runs
// it in the Rust core (on the libuv thread pool), and the JSON it returns is parsed into plain
// objects with exactly the OpenAI shape.

const os = require('os');
const { NativeClient, NativeCancel, version } = require('./native.js');

class OpenAIError extends Error {}

/** An error reported by the engine: `status` is the HTTP status the OpenAI API would answer
 * with, `error` the OpenAI error object, `param` the request field at fault. */
class APIError extends OpenAIError {
  constructor(status, error, message) {
    super(message);
    this.name = this.constructor.name;
    this.status = status;
    this.error = error;
    this.code = error ? error.code : undefined;
    this.param = error ? error.param : undefined;
    this.type = error ? error.type : undefined;
  }
}
class BadRequestError extends APIError {}
class NotFoundError extends APIError {}
class InternalServerError extends APIError {}
class APIUserAbortError extends APIError {
  constructor(message = 'Request was aborted.') {
    super(undefined, undefined, message);
  }
}

const ERROR_CLASSES = {
  invalid_request: BadRequestError,
  context_length_exceeded: BadRequestError,
  not_found: NotFoundError,
  cancelled: APIUserAbortError,
};

/** The native addon reports core errors as JSON in the message; make them openai-style. */
function convertError(err) {
  let info;
  try {
    info = JSON.parse(err && err.message);
  } catch {
    return err;
  }
  if (!info || info.ingle_error !== true) return err;
  const Class = ERROR_CLASSES[info.kind] || InternalServerError;
  if (Class === APIUserAbortError) return new APIUserAbortError();
  const error = { message: info.message, type: info.type, param: info.param, code: info.code };
  return new Class(info.status, error, info.message);
}

async function call(fn) {
  try {
    return await fn();
  } catch (err) {
    throw convertError(err);
  }
}

function callSync(fn) {
  try {
    return fn();
  } catch (err) {
    throw convertError(err);
  }
}

function requestJson(body) {
  if (body === null || typeof body !== 'object') {
    throw new BadRequestError(400, null, 'The request body must be an object');
  }
  return JSON.stringify(body);
}

function checkSignal(signal) {
  if (signal && signal.aborted) throw new APIUserAbortError();
}

/** A response stream: `for await (const chunk of stream)`. `break`, `stream.controller.abort()`
 * or the request's `signal` stop generation at once. */
class Stream {
  constructor(start, signal) {
    this.controller = new AbortController();
    this._start = start; // a Promise of the native stream
    this._signal = signal;
    this._iterated = false;
  }

  async *[Symbol.asyncIterator]() {
    if (this._iterated) throw new OpenAIError('Cannot iterate over a consumed stream');
    this._iterated = true;
    const native = await call(() => this._start);
    const signals = [this.controller.signal, this._signal].filter(Boolean);
    const onAbort = () => native.close();
    for (const s of signals) s.addEventListener('abort', onAbort);
    try {
      for (;;) {
        for (const s of signals) checkSignal(s);
        const text = await call(() => native.next());
        for (const s of signals) checkSignal(s);
        if (text === null) return;
        yield JSON.parse(text);
      }
    } finally {
      native.close();
      for (const s of signals) s.removeEventListener('abort', onAbort);
    }
  }
}

/** Runs a whole-response create; aborting `signal` rejects at once with APIUserAbortError and
 * stops generation at the next token. */
async function abortable(start, signal) {
  checkSignal(signal);
  const cancel = new NativeCancel();
  const promise = call(() => start(cancel));
  if (!signal) return promise;
  let onAbort;
  const aborted = new Promise((_, reject) => {
    onAbort = () => {
      cancel.cancel();
      reject(new APIUserAbortError());
    };
    signal.addEventListener('abort', onAbort, { once: true });
  });
  promise.catch(() => {}); // after an abort its rejection (cancelled) is expected
  try {
    return await Promise.race([promise, aborted]);
  } finally {
    signal.removeEventListener('abort', onAbort);
  }
}

/** create() of chat.completions and completions: `stream: true` gives a Stream, otherwise
 * the whole response. `options.signal` aborts; openai's other request options (headers,
 * timeout, ...) are ignored. */
async function create(startStream, createWhole, body, options) {
  const { stream, ...params } = body || {};
  checkSignal(options.signal);
  const json = requestJson(params);
  if (stream) {
    const start = call(() => startStream(json));
    await start; // errors before the first chunk reject create() itself, as in openai
    return new Stream(start, options.signal);
  }
  return JSON.parse(await abortable((cancel) => createWhole(json, cancel), options.signal));
}

class ChatCompletions {
  constructor(native) {
    this._native = native;
  }

  /** `body`: `model`, `messages` and the OpenAI chat parameters. */
  create(body, options = {}) {
    const native = this._native;
    return create((json) => native.chatCompletionsStream(json),
      (json, cancel) => native.chatCompletionsCreate(json, cancel), body, options);
  }
}

class Completions {
  constructor(native) {
    this._native = native;
  }

  /** `body`: `model`, `prompt` and the OpenAI completion parameters. */
  create(body, options = {}) {
    const native = this._native;
    return create((json) => native.completionsStream(json),
      (json, cancel) => native.completionsCreate(json, cancel), body, options);
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
  async create(body, options = {}) {
    checkSignal(options.signal);
    const json = requestJson(body);
    return embeddingResponse(await call(() => this._native.embeddingsCreate(json)));
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
      const list = JSON.parse(callSync(() => this._native.modelsList()));
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

  async retrieve(model) {
    return JSON.parse(callSync(() => this._native.modelsRetrieve(model)));
  }
}

class Predictions {
  constructor(native) {
    this._native = native;
  }

  /** Runs the predictor `tag` on named `inputs`: `{id, tag, created, results, latency, error, logs}`. */
  async create({ tag, inputs = {} }) {
    return JSON.parse(await call(() => this._native.predictionsCreate(tag, JSON.stringify(inputs))));
  }

  /** One prediction per partial result: `for await (const p of client.predictions.stream(...))`. */
  stream({ tag, inputs = {} }, options = {}) {
    const start = call(() => this._native.predictionsStream(tag, JSON.stringify(inputs)));
    start.catch(() => {}); // reported when iterated
    return new Stream(start, options.signal);
  }
}

/** Runs models in this process. `config`: an ingle TOML config file (default: $INGLE_CONFIG,
 * else the default model); `modelsDir`: where model files are. The openai client's connection
 * options (`apiKey`, `baseURL`, `timeout`, ...) are accepted and ignored. */
class OpenAI {
  constructor(options = {}) {
    const { config = null, modelsDir = null } = options;
    this._native = callSync(() => new NativeClient(config, modelsDir));
    this.chat = { completions: new ChatCompletions(this._native) };
    this.completions = new Completions(this._native);
    this.embeddings = new Embeddings(this._native);
    this.models = new Models(this._native);
    this.predictions = new Predictions(this._native);
  }

  /** Load figures of a model: active_requests, queued_requests, generated_tokens, cancelled_requests. */
  async metrics(model) {
    return JSON.parse(await call(() => this._native.metrics(model)));
  }
}

module.exports = OpenAI;
module.exports.OpenAI = OpenAI;
module.exports.default = OpenAI;
module.exports.Stream = Stream;
module.exports.OpenAIError = OpenAIError;
module.exports.APIError = APIError;
module.exports.BadRequestError = BadRequestError;
module.exports.NotFoundError = NotFoundError;
module.exports.InternalServerError = InternalServerError;
module.exports.APIUserAbortError = APIUserAbortError;
module.exports.version = version();
