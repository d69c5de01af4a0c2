'use strict';
// Audio uploads: `file` is read whole here, in JS, and handed to the addon as bytes (with the
// file's name, a hint for the container) or as raw samples.

const { OpenAIError } = require('./errors.js');
const {
  bounded, badRequest, describe, isObject, toJson, requestBody, requestOptions, checkSignal,
} = require('./request.js');

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
 * field, checked by the engine), its `response_format` and, where the method streams,
 * `stream`. */
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
  return { signal, json, audio, stream: stream === true, format: params.response_format };
}

module.exports = { FILE_KINDS, audioRequest };
