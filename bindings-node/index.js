'use strict';
// ingle: open AI models in this Node process, behind the interface of the `openai` package.
// Only conversion happens here: arguments become the OpenAI JSON request, the native addon runs
// it in the Rust core (on the libuv thread pool), and the JSON it returns is parsed into plain
// objects with exactly the OpenAI shape.

const os = require('os');
const { NativeClient, NativeCancel, version, systemInfo: nativeSystemInfo } = require('./native.js');
const { Parameter, Annotations, predictor, register, PredictorDefinitionError } = require('./predictors.js');

class OpenAIError extends Error {
  constructor(message, options) {
    super(message, options);
    this.name = new.target.name;
  }
}

/** An error reported by the engine: `status` is the HTTP status the OpenAI API would answer
 * with, `error` the OpenAI error object, `param` the request field at fault. */
class APIError extends OpenAIError {
  constructor(status, error, message) {
    super(message);
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
  if (err instanceof OpenAIError) return err;
  let info;
  try {
    info = JSON.parse(err && err.message);
  } catch {
    info = null;
  }
  if (!info || info.ingle_error !== true) {
    // Not the core's: napi's own argument errors (StringExpected, ...). index.js checks every
    // argument before it reaches the addon, so this is a backstop: still an OpenAIError.
    if (err instanceof Error && typeof err.code === 'string') {
      return new OpenAIError(`ingle: ${err.message}`, { cause: err });
    }
    return err;
  }
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

// Checking arguments. Everything a caller can get wrong is found here, in JS, before any native
// work starts, and reported as an OpenAIError: a request's content as BadRequestError (status
// 400, `param` the field at fault, as the engine reports its own checks), a client or request
// option as OpenAIError, as the openai package reports its options.

/** Longest `param` (and path quoted in a message), as in the core: a 1 MB key is not quoted whole. */
const MAX_PARAM_CHARS = 256;
/** Deepest nesting of objects and arrays in a request (JSON parsers stop near 128 levels). */
const MAX_DEPTH = 100;

function bounded(text) {
  if (text.length <= MAX_PARAM_CHARS) return text;
  const end = MAX_PARAM_CHARS - 32;
  return `${text.slice(0, end)}…(${text.length - end} more characters)`;
}

/** A caller's bad request: BadRequestError naming `param` (null: the request as a whole). */
function badRequest(param, message) {
  const shownParam = param === null ? null : bounded(param);
  const error = { message, type: 'invalid_request_error', param: shownParam, code: null };
  return new BadRequestError(400, error, message);
}

/** A bad client or request option (not part of the request itself), as openai reports those. */
function badOption(message) {
  return new OpenAIError(message);
}

/** What a value is, for an error message; never quotes caller text at length. */
function describe(value) {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  switch (typeof value) {
    case 'undefined': return 'undefined';
    case 'number': return `a number (${value})`;
    case 'bigint': return 'a BigInt';
    case 'boolean': return `a boolean (${value})`;
    case 'string': return 'a string';
    case 'symbol': return 'a symbol';
    case 'function': return 'a function';
    default: return 'an object';
  }
}

function isObject(value) {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** `param`'s JSON path one level down: `messages[0]`, `messages[0].content`. */
function childPath(path, key, inArray) {
  if (inArray) return `${path}[${key}]`;
  return path === '' ? key : `${path}.${key}`;
}

/** `\uDC00` for a lone surrogate quoted in a path. */
function escapeUnit(unit) {
  return `\\u${unit.charCodeAt(0).toString(16).toUpperCase()}`;
}

function lonelySurrogate(text) {
  if (typeof text.isWellFormed === 'function') return !text.isWellFormed();
  return /\p{Surrogate}/u.test(text);
}

/** The JSON text of a request (or of prediction inputs), or BadRequestError naming the field
 * that JSON cannot carry faithfully. JSON.stringify alone would turn NaN and ±Infinity into
 * null (so `max_tokens: NaN` means "no limit"), drop functions and symbols silently, write
 * `undefined` in an array as null, Maps and Sets as `{}`, throw a bare TypeError on a BigInt
 * or a cycle, and overflow the stack on deep nesting. Paths are relative to the request body
 * (or to `inputs`, as the engine names them): `max_tokens`, `messages[0].content`. */
function toJson(value) {
  // The objects being written, innermost last, and their paths: JSON.stringify calls `check`
  // depth-first with the object being written as `this`, so whatever lies above `this` on the
  // stack is finished.
  const open = [];
  const paths = [];
  const onStack = new Set();
  function check(key, v) {
    let path = '';
    if (open.length === 0) {
      open.push(this);
      paths.push('');
    } else {
      while (open.length > 1 && open[open.length - 1] !== this) {
        onStack.delete(open.pop());
        paths.pop();
      }
      if (lonelySurrogate(key)) {
        path = childPath(paths[paths.length - 1], key.replace(/\p{Surrogate}/gu, escapeUnit), false);
        throw badRequest(path, `The field name \`${bounded(path)}\` contains a lone UTF-16 surrogate (half of a character); it cannot be encoded as UTF-8`);
      }
      path = childPath(paths[paths.length - 1], key, Array.isArray(this));
    }
    const name = path === '' ? 'The request' : `\`${bounded(path)}\``;
    let primitive = v;
    if (v instanceof Number) primitive = Number(v);
    else if (v instanceof String) primitive = String(v);
    switch (typeof primitive) {
      case 'number':
        if (!Number.isFinite(primitive)) {
          throw badRequest(path, `${name} must be a finite number, not ${primitive} (JSON has no ${primitive})`);
        }
        return v;
      case 'string':
        if (lonelySurrogate(primitive)) {
          throw badRequest(path, `${name} contains a lone UTF-16 surrogate (half of a character); it cannot be encoded as UTF-8`);
        }
        return v;
      case 'bigint':
        throw badRequest(path, `${name} must be a Number, not a BigInt`);
      case 'function':
      case 'symbol':
        throw badRequest(path, `${name} must be JSON data, not ${describe(primitive)}`);
      case 'undefined':
        // Absent in an object, as JSON.stringify and openai treat it; an array has no absent items.
        if (Array.isArray(this)) throw badRequest(path, `${name} is undefined; an array item must have a value`);
        return v;
      case 'object':
        if (v === null || v instanceof Boolean) return v;
        break;
      default:
        return v;
    }
    if (v instanceof BigInt) throw badRequest(path, `${name} must be a Number, not a BigInt`);
    if (v instanceof Map || v instanceof Set || v instanceof ArrayBuffer || ArrayBuffer.isView(v)) {
      const kind = v instanceof Map ? 'a Map' : v instanceof Set ? 'a Set' : 'a typed array or buffer';
      throw badRequest(path, `${name} must be a plain object, array or value, not ${kind} (JSON would write it as an object)`);
    }
    if (onStack.has(v)) throw badRequest(path, `${name} refers back to an object that contains it (a circular structure)`);
    if (open.length > MAX_DEPTH) throw badRequest(path, `${name} is nested more than ${MAX_DEPTH} levels deep`);
    open.push(v);
    paths.push(path);
    onStack.add(v);
    return v;
  }
  return JSON.stringify(value, check);
}

/** `body` itself, which must be an object (not null, not an array). */
function requestBody(body, method) {
  if (!isObject(body)) {
    throw badRequest(null, `${method}(body): the request body must be an object, not ${describe(body)}`);
  }
  return body;
}

function isAbortSignal(signal) {
  if (typeof AbortSignal === 'function' && signal instanceof AbortSignal) return true;
  // One from another realm or a polyfill (the openai package accepts those too).
  return typeof signal === 'object' && signal !== null && typeof signal.aborted === 'boolean' &&
    typeof signal.addEventListener === 'function' && typeof signal.removeEventListener === 'function';
}

/** A request's options (`{ signal }`; openai's other options are accepted and ignored). */
function requestOptions(options, method) {
  if (options === undefined || options === null) return {};
  if (typeof options !== 'object' || Array.isArray(options)) {
    throw badOption(`${method}(body, options): options must be an object, not ${describe(options)}`);
  }
  const { signal } = options;
  if (signal === undefined || signal === null) return {};
  if (!isAbortSignal(signal)) {
    throw badOption(`${method}(body, options): options.signal must be an AbortSignal, not ${describe(signal)}`);
  }
  return { signal };
}

/** A string argument such as a model id: BadRequestError naming it otherwise. */
function stringArgument(value, param, method) {
  if (typeof value !== 'string') {
    throw badRequest(param, `${method}: \`${param}\` must be a string, not ${describe(value)}`);
  }
  if (lonelySurrogate(value)) {
    throw badRequest(param, `${method}: \`${param}\` contains a lone UTF-16 surrogate (half of a character)`);
  }
  return value;
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
 * timeout, ...) are ignored. Every argument is checked before anything starts. */
async function create(method, startStream, createWhole, body, options) {
  const { signal } = requestOptions(options, method);
  const { stream, ...params } = requestBody(body, method);
  if (stream !== undefined && stream !== null && typeof stream !== 'boolean') {
    throw badRequest('stream', `\`stream\` must be a boolean, not ${describe(stream)}`);
  }
  const json = toJson(params);
  checkSignal(signal);
  if (stream) {
    const start = call(() => startStream(json));
    await start; // errors before the first chunk reject create() itself, as in openai
    return new Stream(start, signal);
  }
  return JSON.parse(await abortable((cancel) => createWhole(json, cancel), signal));
}

class ChatCompletions {
  constructor(native) {
    this._native = native;
  }

  /** `body`: `model`, `messages` and the OpenAI chat parameters. */
  create(body, options) {
    const native = this._native;
    return create('chat.completions.create', (json) => native.chatCompletionsStream(json),
      (json, cancel) => native.chatCompletionsCreate(json, cancel), body, options);
  }
}

class Completions {
  constructor(native) {
    this._native = native;
  }

  /** `body`: `model`, `prompt` and the OpenAI completion parameters. */
  create(body, options) {
    const native = this._native;
    return create('completions.create', (json) => native.completionsStream(json),
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
  async create(body, options) {
    const { signal } = requestOptions(options, 'embeddings.create');
    const json = toJson(requestBody(body, 'embeddings.create'));
    checkSignal(signal);
    return embeddingResponse(await call(() => this._native.embeddingsCreate(json)));
  }
}

/** Starts `start` (a Promise of a native stream); aborting `signal` meanwhile rejects at once
 * with APIUserAbortError, and the stream is closed when it arrives. */
async function abortableStart(start, signal) {
  if (!signal) return start;
  let onAbort;
  const aborted = new Promise((_, reject) => {
    onAbort = () => {
      start.then((native) => native.close(), () => {});
      reject(new APIUserAbortError());
    };
    signal.addEventListener('abort', onAbort, { once: true });
  });
  try {
    return await Promise.race([start, aborted]);
  } finally {
    signal.removeEventListener('abort', onAbort);
  }
}

/** A fetch `Response` whose body streams the native speech: the bytes pulled at the start, then
 * one `next()` per read on the libuv thread pool (synthesis runs at most a sentence ahead of
 * the reader). Aborting `signal`, `body.cancel()` or the end of the audio closes the native
 * stream, which stops synthesis before the next sentence; an abort errors the body with
 * APIUserAbortError, a failure in a later sentence with the engine's error. */
function speechResponse(native, signal) {
  const first = native.takeFirst();
  let finished = false;
  let onAbort;
  const finish = () => {
    finished = true;
    native.close();
    if (signal) signal.removeEventListener('abort', onAbort);
  };
  const body = new ReadableStream({
    start(controller) {
      if (signal) {
        onAbort = () => {
          if (finished) return;
          finish();
          controller.error(new APIUserAbortError());
        };
        signal.addEventListener('abort', onAbort, { once: true });
      }
      if (first) controller.enqueue(first);
    },
    async pull(controller) {
      let chunk;
      try {
        chunk = await call(() => native.next());
      } catch (err) {
        if (!finished) {
          finish();
          controller.error(err);
        }
        return;
      }
      if (finished) return; // aborted while this sentence was synthesised
      if (chunk === null) {
        finish();
        controller.close();
      } else {
        controller.enqueue(chunk);
      }
    },
    cancel() {
      if (!finished) finish();
    },
  });
  return new Response(body, { status: 200, headers: { 'content-type': native.contentType } });
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
    const start = call(() => this._native.audioSpeechStream(json));
    const native = await abortableStart(start, signal);
    if (signal && signal.aborted) {
      native.close();
      throw new APIUserAbortError();
    }
    return speechResponse(native, signal);
  }
}

// Audio uploads: `file` is read whole here, in JS, and handed to the addon as bytes (with the
// file's name, a hint for the container) or as raw samples.

const FILE_KINDS = 'a File or Blob, a Response, fs.createReadStream(path), a ReadableStream or ' +
  'other async iterable of bytes, what toFile() makes, a Buffer, Uint8Array or ArrayBuffer, or ' +
  '{ samples: Float32Array, sample_rate, channels }';

function isBlob(value) {
  if (typeof Blob === 'function' && value instanceof Blob) return true;
  return isObject(value) && typeof value.arrayBuffer === 'function' && typeof value.size === 'number' &&
    typeof value.slice === 'function';
}

function isResponse(value) {
  if (typeof Response === 'function' && value instanceof Response) return true;
  return isObject(value) && typeof value.arrayBuffer === 'function' && typeof value.url === 'string' &&
    'body' in value;
}

function isReadableStream(value) {
  return isObject(value) && typeof value.getReader === 'function';
}

function isAsyncIterable(value) {
  return isObject(value) && typeof value[Symbol.asyncIterator] === 'function';
}

function basename(name) {
  return name.split(/[\\/]/).pop() || undefined;
}

/** The upload's file name as openai finds it (`name`, `filename`, a URL's last segment, a
 * stream's `path`), only a hint for the container (undefined: none); lone surrogates become
 * U+FFFD. */
function fileName(value) {
  let name;
  for (const key of ['name', 'filename']) {
    if (typeof value[key] === 'string' && value[key]) {
      name = basename(value[key]);
      break;
    }
  }
  if (name === undefined && typeof value.url === 'string' && value.url) {
    try {
      name = basename(decodeURIComponent(new URL(value.url).pathname));
    } catch {
      name = basename(value.url);
    }
  }
  if (name === undefined && (typeof value.path === 'string' || Buffer.isBuffer(value.path)) && value.path.length) {
    name = basename(String(value.path));
  }
  return name === undefined ? undefined : name.replace(/\p{Surrogate}/gu, '\uFFFD');
}

function bytesView(value) {
  if (value instanceof Uint8Array) return value;
  if (ArrayBuffer.isView(value)) return new Uint8Array(value.buffer, value.byteOffset, value.byteLength);
  return new Uint8Array(value); // an ArrayBuffer or SharedArrayBuffer
}

function isBuffer(value) {
  return ArrayBuffer.isView(value) || value instanceof ArrayBuffer ||
    (typeof SharedArrayBuffer === 'function' && value instanceof SharedArrayBuffer);
}

/** `file` wrapped in an error naming it (its reading failed, or it yielded something odd). */
function fileError(message, cause) {
  const err = badRequest('file', message);
  if (cause !== undefined) err.cause = cause;
  return err;
}

/** Every chunk of a stream or async iterable, as bytes; stops (and so closes an fs stream)
 * when `signal` aborts. Chunks may be bytes, strings (UTF-8) or Blobs, as openai takes them. */
async function readChunks(iterable, signal) {
  const chunks = [];
  let index = 0;
  try {
    for await (const chunk of iterable) {
      checkSignal(signal);
      if (typeof chunk === 'string') chunks.push(Buffer.from(chunk, 'utf8'));
      else if (isBuffer(chunk)) chunks.push(bytesView(chunk));
      else if (isBlob(chunk)) chunks.push(new Uint8Array(await chunk.arrayBuffer()));
      else throw fileError(`\`file\` yielded ${describe(chunk)} as its chunk ${index}; a stream must give bytes (Buffer, Uint8Array, ArrayBuffer), strings or Blobs`);
      index++;
    }
  } catch (err) {
    if (err instanceof OpenAIError) throw err;
    throw fileError(`Cannot read \`file\`: ${err && err.message}`, err);
  }
  checkSignal(signal);
  return Buffer.concat(chunks);
}

async function readWhole(read) {
  try {
    return new Uint8Array(await read());
  } catch (err) {
    if (err instanceof OpenAIError) throw err;
    throw fileError(`Cannot read \`file\`: ${err && err.message}`, err);
  }
}

/** `{ samples, sample_rate, channels }`: checked, for the addon. */
function rawAudio(file) {
  const { samples, sample_rate: rate, channels = 1 } = file;
  if (!(samples instanceof Float32Array)) {
    throw badRequest('file.samples', `\`file.samples\` must be a Float32Array of samples, not ${describe(samples)}${ArrayBuffer.isView(samples) ? ` (${samples.constructor.name})` : ''}`);
  }
  if (!Number.isInteger(rate) || rate < 1000 || rate > 768000) {
    throw badRequest('file.sample_rate', `\`file.sample_rate\` must be a whole number of Hz from 1000 to 768000, not ${describe(rate)}`);
  }
  if (!Number.isInteger(channels) || channels < 1 || channels > 64) {
    throw badRequest('file.channels', `\`file.channels\` must be a whole number from 1 to 64, not ${describe(channels)}`);
  }
  if (samples.length % channels !== 0) {
    throw badRequest('file.samples', `\`file.samples\` has ${samples.length} samples, not a whole number of frames of ${channels} channels (they are interleaved)`);
  }
  for (const key of Object.keys(file)) {
    if (!['samples', 'sample_rate', 'channels'].includes(key)) {
      throw badRequest(`file.${key}`, `Raw audio is { samples, sample_rate, channels }; \`file.${bounded(key)}\` is not one of them`);
    }
  }
  return { samples, sampleRate: rate, channels };
}

/** The audio of `file`, as the addon takes it: `{ bytes, filename }` or `{ samples, sampleRate,
 * channels }`. Streams are read to the end; `signal` stops the reading. */
async function uploadedAudio(file, signal) {
  if (file === undefined || file === null) {
    throw badRequest('file', `Missing required parameter: \`file\` (${FILE_KINDS})`);
  }
  if (typeof file === 'string') {
    throw badRequest('file', `\`file\` must be the audio, not a string; for a path use fs.createReadStream(path)`);
  }
  if (isBuffer(file)) return { bytes: bytesView(file) };
  if (!isObject(file)) {
    throw badRequest('file', `\`file\` must be ${FILE_KINDS}; not ${describe(file)}`);
  }
  if (typeof file.then === 'function') {
    throw badRequest('file', '`file` is a Promise: await it first (`file: await toFile(...)`)');
  }
  if ('samples' in file) return rawAudio(file);
  const filename = fileName(file);
  if (isBlob(file)) return { bytes: await readWhole(() => file.arrayBuffer()), filename };
  if (isResponse(file)) {
    if (!file.ok && typeof file.status === 'number') {
      throw badRequest('file', `\`file\` is a Response with status ${file.status}, not the audio`);
    }
    return { bytes: await readWhole(() => file.arrayBuffer()), filename };
  }
  if (isReadableStream(file) || isAsyncIterable(file)) return { bytes: await readChunks(file, signal), filename };
  // openai's toStreamingFile(data, name): { data, name }.
  if ((isReadableStream(file.data) || isAsyncIterable(file.data)) && filename !== undefined) {
    return { bytes: await readChunks(file.data, signal), filename };
  }
  throw badRequest('file', `\`file\` must be ${FILE_KINDS}; this object is none of them`);
}

/** The parameters of a transcription or translation: the audio, the request JSON (every other
 * field, checked by the engine) and, where the method streams, `stream`. */
async function audioRequest(body, options, method, streams) {
  const { signal } = requestOptions(options, method);
  const { file, ...params } = requestBody(body, method);
  let stream;
  if (streams) {
    ({ stream } = params);
    delete params.stream;
    if (stream !== undefined && stream !== null && typeof stream !== 'boolean') {
      throw badRequest('stream', `\`stream\` must be a boolean, not ${describe(stream)}`);
    }
  }
  const json = toJson(params);
  checkSignal(signal);
  const audio = await uploadedAudio(file, signal);
  checkSignal(signal);
  return { signal, json, audio, stream: stream === true };
}

/** A whole transcription as openai's package gives it: an object for `json` and `verbose_json`,
 * else the text (`text`, `srt`, `vtt`). */
function transcriptionResult({ format, body }) {
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
    const { signal, json, audio, stream } = await audioRequest(body, options, 'audio.transcriptions.create', true);
    const native = this._native;
    if (stream) {
      const start = call(() => native.audioTranscriptionsStream(json, audio));
      const started = await abortableStart(start, signal);
      if (signal && signal.aborted) {
        started.close();
        throw new APIUserAbortError();
      }
      return new Stream(Promise.resolve(started), signal);
    }
    return transcriptionResult(await abortable((cancel) => native.audioTranscriptionsCreate(json, audio, cancel), signal));
  }
}

class Translations {
  constructor(native) {
    this._native = native;
  }

  /** Like transcriptions.create (without `language` and `stream`); every model ingle ships is
   * English-only, so this rejects with BadRequestError naming `model`. */
  async create(body, options) {
    const { signal, json, audio } = await audioRequest(body, options, 'audio.translations.create', false);
    return transcriptionResult(await abortable(() => this._native.audioTranslationsCreate(json, audio), signal));
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

  /** Downloads `model` (a tag of ingle's catalog: `ingle models` lists them) and what it needs
   * into the models directory, each file verified (sha256) and written atomically; an
   * interrupted pull resumes. Files already there are re-hashed, a corrupted one fetched again;
   * the model is then served by this client. Resolves to `{tag, status, models_dir, files:
   * [{tag, path, size, sha256, fetched}], downloaded_bytes}`. `options.onProgress(event)`
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
    return JSON.parse(callSync(() => this._native.modelsRetrieve(model)));
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
  async create(body) {
    const { tag, inputs, buffers } = predictionArguments(body, 'predictions.create');
    return JSON.parse(await call(() => this._native.predictionsCreate(tag, inputs, buffers)));
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

/** Runs models in this process. `config`: an ingle TOML config file (default: $INGLE_CONFIG,
 * else the default model); `modelsDir`: where model files are. The openai client's connection
 * options (`apiKey`, `baseURL`, `timeout`, ...) are accepted and ignored. */
class OpenAI {
  constructor(options = {}) {
    if (!isObject(options)) throw badOption(`new OpenAI(options): options must be an object, not ${describe(options)}`);
    const { config = null, modelsDir = null } = options;
    for (const [name, value] of [['config', config], ['modelsDir', modelsDir]]) {
      if (value !== null && typeof value !== 'string') {
        throw badOption(`new OpenAI(options): options.${name} must be a path string, not ${describe(value)}`);
      }
      if (typeof value === 'string' && lonelySurrogate(value)) {
        throw badOption(`new OpenAI(options): options.${name} contains a lone UTF-16 surrogate (half of a character)`);
      }
    }
    this._native = callSync(() => new NativeClient(config, modelsDir));
    const native = this._native;
    /** Serve functions of your own: `client.predictors.register(predictor({ tag, ... }, fn))`. */
    this.predictors = {
      register(...predictors) {
        for (const p of predictors) register(native, p);
      },
    };
    const { predictors = [] } = options;
    if (!Array.isArray(predictors)) throw badOption(`new OpenAI(options): options.predictors must be an array, not ${describe(predictors)}`);
    this.predictors.register(...predictors);
    this.chat = { completions: new ChatCompletions(this._native) };
    this.completions = new Completions(this._native);
    this.embeddings = new Embeddings(this._native);
    this.audio = {
      speech: new Speech(this._native),
      transcriptions: new Transcriptions(this._native),
      translations: new Translations(this._native),
    };
    this.models = new Models(this._native);
    this.predictions = new Predictions(this._native);
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
