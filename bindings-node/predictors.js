'use strict';
// Predictors written in JavaScript: `predictor({ tag, inputs, outputs }, fn)` declares a
// function whose parameters carry annotations (`Parameter.AudioVoice({ name, voices })`, ...),
// and `client.predictors.register(p)` serves it through the OpenAI methods and `predictions`.
//
// The engine runs predictions on libuv's thread pool and asks for each step (start, next
// output, close) through `dispatch`, which runs here, on the main thread: the function's
// promises and async generators are awaited without blocking the event loop, and each answer
// goes back with `predictorReply`. What the function logs with `console` while it runs goes to
// its prediction's `logs` (AsyncLocalStorage tells its calls from the rest of the program).

const { AsyncLocalStorage } = require('async_hooks');
const util = require('util');
const native = require('./native.js');
const { toJson } = require('./request.js');
const { BadRequestError } = require('./errors.js');

/** A predictor's declaration breaks a rule: `functionName` and `param` name the culprit. */
class PredictorDefinitionError extends TypeError {
  constructor(message, functionName, param) {
    super(message);
    this.name = 'PredictorDefinitionError';
    this.functionName = functionName;
    this.param = param;
  }
}

const PARAMETER = Symbol('ingle.Parameter');

// Annotation → [the core's name, the JS type a parameter of it has by default].
const ANNOTATIONS = {
  Generic: ['generic', null],
  Numeric: ['generic', 'number'],
  Embedding: ['embedding', null], // texts in (array of strings), the matrix out (tensor)
  EmbeddingDims: ['embedding_dims', 'integer'],
  AudioVoice: ['audio_voice', 'string'],
  AudioSpeed: ['audio_speed', 'number'],
  Audio: ['audio', 'audio'],
  TranscriptionLanguage: ['transcription_language', 'string'],
  TranscriptionPrompt: ['transcription_prompt', 'string'],
  TranscriptionTask: ['transcription_task', 'string'], // 'transcribe' or 'translate'
  TranscriptionWordTimestamps: ['transcription_word_timestamps', 'boolean'],
  TranscriptionSegment: ['transcription_segment', 'object'],
  ChatMessages: ['chat_messages', 'array'],
  // The chat's images ({ data: Uint8Array, dtype: 'uint8', shape: [H, W, C] } each, C = 3 or 4)
  // and audio parts (Float32Array each, mono at `sample_rate`), in order of appearance.
  ChatImages: ['chat_images', 'array'],
  ChatAudios: ['chat_audios', 'array'],
  ReasoningEffort: ['reasoning_effort', 'string'],
  ReasoningDelta: ['reasoning_delta', 'string'],
  Prompt: ['prompt', 'string'],
  MaxTokens: ['max_tokens', 'integer'],
  Temperature: ['temperature', 'number'],
  TopP: ['top_p', 'number'],
  Stop: ['stop', 'array'],
  Seed: ['seed', 'integer'],
  FrequencyPenalty: ['frequency_penalty', 'number'],
  PresencePenalty: ['presence_penalty', 'number'],
  TopK: ['top_k', 'integer'],
  MinP: ['min_p', 'number'],
  RepetitionPenalty: ['repetition_penalty', 'number'],
  ChatTemplateKwargs: ['chat_template_kwargs', 'object'],
  Tools: ['tools', 'array'],
  ChatTools: ['tools', 'array'], // Muna's name for Tools
  ToolChoice: ['tool_choice', 'object'],
  ParallelToolCalls: ['parallel_tool_calls', 'boolean'],
  AllowRepeatedToolCalls: ['allow_repeated_tool_calls', 'boolean'],
  ResponseFormat: ['response_format', 'object'],
  Logprobs: ['logprobs', 'integer'],
  LogitBias: ['logit_bias', 'object'],
  ToolCalls: ['tool_calls', 'array'],
  TokenLogprobs: ['token_logprobs', 'array'],
  TextDelta: ['text_delta', 'string'],
  FinishReason: ['finish_reason', 'string'],
  Usage: ['usage', 'object'],
  RerankQuery: ['rerank_query', 'string'],
  RerankDocuments: ['rerank_documents', 'array'],
  RerankScores: ['rerank_scores', 'array'],
  ImageWidth: ['image_width', 'integer'],
  ImageHeight: ['image_height', 'integer'],
  // With ImageWidth or ImageHeight: the predictor serves images.generate (a string prompt in,
  // { data: Uint8Array, shape: [H, W, C] } images out, C = 1, 3 or 4; [N, H, W, C] or a list).
  ImageCount: ['image_count', 'integer'],
};

/** `Parameter.AudioVoice({ name: 'voice', description, voices: ['low', 'high'] })`: one input or
 * output of a predictor, with what it means to the OpenAI methods. Fields: `name`, `type`
 * ('string' | 'integer' | 'number' | 'boolean' | 'array' | 'object' | 'tensor' | 'audio'),
 * `description`, `default`, `required`, `min`, `max`, `choices`, `items`, and per annotation
 * `voices` (AudioVoice), `sample_rate` (Audio, ChatAudios), `context_length` (ChatMessages). */
const Parameter = {};
for (const [name, [kind, type]] of Object.entries(ANNOTATIONS)) {
  Parameter[name] = (options = {}) => {
    if (options === null || typeof options !== 'object') {
      throw new TypeError(`Parameter.${name}(options): options must be an object`);
    }
    return { [PARAMETER]: true, annotation: name, kind, defaultType: type, ...options };
  };
}

// Muna's names (`muna.beta.Annotations`) → the annotation of `Parameter` they mean, so a
// declaration written with them needs only its imports changed.
const BETA_ANNOTATIONS = {
  AudioSpeed: 'AudioSpeed',
  AudioVoice: 'AudioVoice',
  ChatAudios: 'ChatAudios',
  ChatImages: 'ChatImages',
  ChatMessages: 'ChatMessages',
  ChatTools: 'Tools',
  EmbeddingDims: 'EmbeddingDims',
  FrequencyPenalty: 'FrequencyPenalty',
  ImageCount: 'ImageCount',
  ImageHeight: 'ImageHeight',
  ImageWidth: 'ImageWidth',
  MaxOutputTokens: 'MaxTokens',
  PresencePenalty: 'PresencePenalty',
  ReasoningEffort: 'ReasoningEffort',
  ResponseFormat: 'ResponseFormat',
  SamplingProbability: 'TopP',
  SamplingTemperature: 'Temperature',
  TopP: 'TopP',
  Temperature: 'Temperature',
  Seed: 'Seed',
  StopSequences: 'Stop',
  TranscriptionLanguage: 'TranscriptionLanguage',
  TranscriptionPrompt: 'TranscriptionPrompt',
  TranscriptionTask: 'TranscriptionTask',
};
// Muna's names ingle has nothing for: declaring one fails, naming the parameter (none today).
const BETA_UNSUPPORTED = {};

/** `beta.Annotations.SamplingTemperature({ name: 'temperature', default: 0.7 })`: Muna's names
 * for the annotations of `Parameter` (MaxOutputTokens is MaxTokens, SamplingProbability TopP,
 * SamplingTemperature Temperature, StopSequences Stop, ChatTools Tools; ChatImages, ChatAudios
 * and ReasoningEffort are Parameter's of the same names). */
const Annotations = {};
for (const [name, ours] of Object.entries(BETA_ANNOTATIONS)) Annotations[name] = (options = {}) => Parameter[ours](options);
for (const [name, why] of Object.entries(BETA_UNSUPPORTED)) {
  Annotations[name] = (options = {}) => {
    if (options === null || typeof options !== 'object') {
      throw new TypeError(`Annotations.${name}(options): options must be an object`);
    }
    return { [PARAMETER]: true, ...options, annotation: name, kind: 'unsupported', unsupported: why };
  };
}

const TYPES = ['string', 'integer', 'number', 'boolean', 'array', 'object', 'tensor', 'audio'];

function describe(value) {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  return typeof value === 'object' ? `a ${value.constructor ? value.constructor.name : 'object'}` : `a ${typeof value}`;
}

/** The core's JSON of one parameter. */
function declareParameter(p, side, index, fail) {
  const where = `${side}[${index}]`;
  if (p === null || typeof p !== 'object') fail(null, `${where} must be a parameter (Parameter.X({ name, ... })), not ${describe(p)}`);
  const name = p.name;
  if (typeof name !== 'string' || name === '') fail(null, `${where} needs a \`name\``);
  if (p.kind === 'unsupported') fail(name, `is annotated ${p.annotation}, which ingle does not support: ${p.unsupported}`);
  let type = p.type || p.defaultType;
  if (p.kind === 'embedding' && !p.type) type = side === 'inputs' ? 'array' : 'tensor';
  if (!type && Array.isArray(p.choices) && p.choices.length) {
    type = typeof p.choices[0] === 'string' ? 'string' : Number.isInteger(p.choices[0]) ? 'integer' : 'number';
  }
  if (!TYPES.includes(type)) fail(name, `has the type ${JSON.stringify(type)}; types are ${TYPES.join(', ')}`);
  const json = { name, type };
  if (p.description !== undefined) json.description = String(p.description);
  for (const key of ['min', 'max', 'items']) if (p[key] !== undefined) json[key] = p[key];
  if (p.kind === 'embedding' && side === 'inputs' && !p.items) json.items = 'string';
  if (p.default !== undefined) json.default = p.default;
  if (p.required !== undefined) json.required = p.required;
  let choices = p.choices;
  const kind = p.kind || 'generic';
  if (kind === 'audio_voice') {
    const voices = p.voices || choices;
    json.annotation = { type: kind, voices };
    choices = choices || voices;
  } else if (kind === 'audio_speed') {
    json.annotation = { type: kind, min: p.min ?? 0.25, max: p.max ?? 4.0 };
    json.min = json.annotation.min;
    json.max = json.annotation.max;
  } else if (kind === 'embedding_dims') {
    // Without `max`, the default is the most dimensions there are.
    json.annotation = { type: kind, min: p.min ?? 1, max: p.max ?? (Number.isInteger(p.default) ? p.default : undefined) };
  } else if (kind === 'audio' || kind === 'chat_audios') {
    json.annotation = { type: kind, sample_rate: p.sample_rate };
  } else if (kind === 'chat_messages' && p.context_length !== undefined) {
    json.annotation = { type: kind, context_length: p.context_length };
  } else if (kind !== 'generic') {
    json.annotation = kind;
  }
  if (choices !== undefined) json.choices = choices;
  return json;
}

const CHAT_OUTPUTS = [
  { name: 'text', type: 'string', annotation: 'text_delta' },
  { name: 'finish_reason', type: 'string', annotation: 'finish_reason', required: false },
  { name: 'usage', type: 'object', annotation: 'usage', required: false },
  { name: 'reasoning', type: 'string', annotation: 'reasoning_delta', required: false },
];

/** A function as a predictor: `predictor({ tag, description, inputs, outputs }, fn)`. `fn`
 * receives one object of the inputs by name and returns (or resolves to) its output, or yields
 * partial outputs (a generator or async generator). A chat predictor (an input annotated
 * ChatMessages) yields strings or chat completion chunks and declares no outputs. Throws a
 * PredictorDefinitionError naming the parameter when a rule is broken. */
function predictor(spec, fn) {
  const functionName = (typeof fn === 'function' && fn.name) || 'predictor';
  const fail = (param, message) => {
    throw new PredictorDefinitionError(`${functionName}: ${param ? `the parameter \`${param}\` ` : ''}${message}`, functionName, param);
  };
  if (spec === null || typeof spec !== 'object') fail(null, `predictor(spec, fn): spec must be an object, not ${describe(spec)}`);
  if (typeof fn !== 'function') fail(null, `predictor(spec, fn): fn must be a function, not ${describe(fn)}`);
  const { tag, description = '', inputs = [], outputs } = spec;
  if (typeof tag !== 'string') fail(null, 'predictor(spec, fn): spec.tag must be a string such as "@me/echo"');
  if (!Array.isArray(inputs)) fail(null, 'spec.inputs must be an array of parameters');
  const constructorName = fn.constructor ? fn.constructor.name : '';
  const generator = spec.kind ? spec.kind === 'generator' : /GeneratorFunction$/.test(constructorName);
  const declaredInputs = inputs.map((p, i) => declareParameter(p, 'inputs', i, fail));
  const kinds = declaredInputs.map((p) => (typeof p.annotation === 'string' ? p.annotation : p.annotation && p.annotation.type));
  const chat = kinds.includes('chat_messages') || kinds.includes('prompt');
  const takesAudio = declaredInputs.some((p) => p.type === 'audio');
  let declaredOutputs;
  if (chat) {
    if (outputs !== undefined) fail(null, 'is a chat predictor: it yields strings or chat completion chunks and declares no outputs');
    declaredOutputs = CHAT_OUTPUTS;
  } else {
    if (!Array.isArray(outputs) || outputs.length === 0) fail(null, 'spec.outputs must be a non-empty array of parameters');
    declaredOutputs = outputs.map((p, i) => {
      const json = declareParameter(p, 'outputs', i, fail);
      if (takesAudio && json.type === 'string' && !json.annotation) json.annotation = 'text_delta'; // the transcription
      return json;
    });
  }
  const declaration = JSON.stringify({
    tag,
    kind: generator ? 'generator' : 'eager',
    description,
    inputs: declaredInputs,
    outputs: declaredOutputs,
  });
  try {
    native.checkPredictorDeclaration(declaration);
  } catch (err) {
    const info = engineError(err);
    if (!info) throw err;
    throw new PredictorDefinitionError(`${functionName}: ${info.message}`, functionName, info.param);
  }
  return Object.freeze({
    tag, fn, functionName, generator, chat, declaration,
    inputs: declaredInputs, outputs: declaredOutputs,
  });
}

function engineError(err) {
  try {
    const info = JSON.parse(err && err.message);
    return info && info.ingle_error === true ? info : null;
  } catch {
    return null;
  }
}

// --- Running -------------------------------------------------------------------------------

const logsOf = new AsyncLocalStorage();
const MAX_LOG_CHARS = 1 << 20;
let consolePatched = false;

/** `console` while predictors are registered: what a predictor logs goes to its prediction. */
function patchConsole() {
  if (consolePatched) return;
  consolePatched = true;
  for (const method of ['log', 'info', 'warn', 'error', 'debug']) {
    const original = console[method];
    console[method] = function captured(...args) {
      const store = logsOf.getStore();
      if (store) {
        // Capped like the engine's logs (1 MB): a predictor logging in a loop must not grow
        // without bound between two steps.
        if (store.text.length < MAX_LOG_CHARS) store.text += `${util.format(...args)}\n`.slice(0, MAX_LOG_CHARS - store.text.length);
        return;
      }
      original.apply(this, args);
    };
  }
}

const TYPED_ARRAYS = {
  float32: Float32Array, int32: Int32Array, int64: BigInt64Array, int8: Int8Array, uint8: Uint8Array,
};

function dtypeOf(array) {
  for (const [dtype, Class] of Object.entries(TYPED_ARRAYS)) if (array instanceof Class) return dtype;
  return null;
}

/** An input from the engine: `$raw` references become typed arrays. */
function fromEngine(value, buffers) {
  // A list of them (a chat's images, its audio parts).
  if (Array.isArray(value) && value.length && value.every((v) => v && typeof v.$raw === 'number')) {
    return value.map((v) => fromEngine(v, buffers));
  }
  if (value === null || typeof value !== 'object' || typeof value.$raw !== 'number') return value;
  const bytes = buffers[value.$raw].slice(); // own, aligned memory
  if (value.kind === 'audio') return new Float32Array(bytes.buffer);
  const Class = TYPED_ARRAYS[value.dtype];
  const data = Class ? new Class(bytes.buffer) : bytes;
  return { data, dtype: value.dtype, shape: value.shape };
}

class OutputError extends Error {}

const MAX_CHANNELS = 64;

/** `[channels, channelsFirst]` of a 2-D audio shape: `[F, C]` (interleaved) or `[C, F]`
 * (channels first), as the two documents predictors are written from say; the shape decides:
 * the channels are the side of at most 64 shorter than the other. Ambiguous shapes are refused
 * naming `what` (the same rule as the Python package's). */
function audioLayout(shape, what) {
  const [rows, columns] = shape;
  if (1 <= columns && columns <= MAX_CHANNELS && (rows > columns || rows === 0 || (rows === 1 && columns === 1))) return [columns, false];
  if (1 <= rows && rows <= MAX_CHANNELS && (columns > rows || columns === 0)) return [rows, true];
  if (rows === columns) {
    throw new OutputError(`${what} has shape [${shape.join(', ')}], which is ambiguous: [frames, channels] or [channels, frames]? The channels are the shorter side; give audio with more frames than channels`);
  }
  throw new OutputError(`${what} has shape [${shape.join(', ')}]: read either way it has more than ${MAX_CHANNELS} channels (or none); audio is [frames], [frames, channels] or [channels, frames] with 1 to ${MAX_CHANNELS} channels`);
}

/** `[interleaved samples, channels]` of audio given as `{ data, shape }` (or rows). */
function shapedAudio(data, shape, what) {
  if (!shape.every((n) => Number.isInteger(n) && n >= 0) || shape.reduce((a, b) => a * b, 1) !== data.length) {
    throw new OutputError(`${what} has the shape ${JSON.stringify(shape)}, which does not fit its ${data.length} samples`);
  }
  if (shape.length === 1) return [data, 1];
  if (shape.length !== 2) throw new OutputError(`${what} has shape [${shape.join(', ')}]; audio is [frames], [frames, channels] or [channels, frames]`);
  const [channels, channelsFirst] = audioLayout(shape, what);
  if (!channelsFirst) return [data, channels];
  const frames = shape[1];
  const interleaved = new Float32Array(data.length);
  for (let c = 0; c < channels; c += 1) {
    for (let f = 0; f < frames; f += 1) interleaved[f * channels + c] = data[c * frames + f];
  }
  return [interleaved, channels];
}

/** One output value as the engine takes it: JSON, or a `$raw` reference into `buffers`. */
function toEngine(value, output, buffers) {
  if (value === undefined || value === null) return null;
  const what = `the output \`${output.name}\``;
  if (output.type === 'audio') {
    let samples = value;
    let channels = 1;
    if (!(value instanceof Float32Array) && value && value.samples instanceof Float32Array) {
      samples = value.samples;
      channels = value.channels || 1;
    } else if (value && value.data instanceof Float32Array && Array.isArray(value.shape)) {
      [samples, channels] = shapedAudio(value.data, value.shape, what);
    } else if (Array.isArray(value) && value.length && value.every((row) => row instanceof Float32Array)) {
      const width = value[0].length;
      if (value.some((row) => row.length !== width)) throw new OutputError(`${what} has rows of different lengths`);
      const data = new Float32Array(value.length * width);
      value.forEach((row, i) => data.set(row, i * width));
      [samples, channels] = shapedAudio(data, [value.length, width], what);
    }
    if (!(samples instanceof Float32Array)) {
      throw new OutputError(`${what} is ${describe(value)}; audio is a Float32Array of samples, { samples, channels } (interleaved), { data, shape } or an array of Float32Array rows`);
    }
    buffers.push(new Uint8Array(samples.buffer, samples.byteOffset, samples.byteLength));
    return { $raw: buffers.length - 1, kind: 'audio', sample_rate: output.annotation.sample_rate, channels };
  }
  if (output.type === 'tensor') {
    let data;
    let shape;
    const isTensor = (v) => v && ArrayBuffer.isView(v.data) && Array.isArray(v.shape);
    if (Array.isArray(value) && value.length && value.every(isTensor)) {
      // A list of tensors of one shape and type is their stack (images.generate's n images).
      const [first] = value;
      const same = (t) => t.data.constructor === first.data.constructor
        && t.shape.length === first.shape.length && t.shape.every((d, i) => d === first.shape[i]);
      if (!value.every(same)) throw new OutputError(`${what} is a list of tensors of different shapes or types; a list of tensors must be of one shape and type`);
      data = new first.data.constructor(value.reduce((n, t) => n + t.data.length, 0));
      let at = 0;
      for (const t of value) {
        data.set(t.data, at);
        at += t.data.length;
      }
      shape = [value.length, ...first.shape];
    } else if (Array.isArray(value)) { // rows: Float32Array or number[] each
      const width = value.length ? value[0].length : 0;
      data = new Float32Array(value.length * width);
      value.forEach((row, i) => {
        if (!row || row.length !== width) throw new OutputError(`${what} has rows of different lengths`);
        data.set(row, i * width);
      });
      shape = [value.length, width];
    } else if (value && ArrayBuffer.isView(value.data) && Array.isArray(value.shape)) {
      ({ data, shape } = value);
    } else {
      throw new OutputError(`${what} is ${describe(value)}; a tensor is an array of rows or { data, shape }`);
    }
    const dtype = dtypeOf(data);
    if (!dtype) throw new OutputError(`${what} is a ${data.constructor.name}; tensors are Float32Array, Int32Array, BigInt64Array, Int8Array or Uint8Array`);
    buffers.push(new Uint8Array(data.buffer, data.byteOffset, data.byteLength));
    return { $raw: buffers.length - 1, kind: 'tensor', dtype, shape };
  }
  if (typeof value === 'bigint') return Number(value);
  return value;
}

function chatOutputs(value) {
  if (typeof value === 'string') return [value, null, null, null];
  if (value === null || typeof value !== 'object') {
    throw new OutputError(`is ${describe(value)}; a chat predictor gives strings or chat completion chunks`);
  }
  const choice = (value.choices && value.choices[0]) || {};
  const content = (choice.delta && choice.delta.content) || '';
  if (typeof content !== 'string') throw new OutputError('has a delta content that is not a string');
  const reasoning = (choice.delta && choice.delta.reasoning_content) || null;
  if (reasoning !== null && typeof reasoning !== 'string') throw new OutputError('has a delta reasoning_content that is not a string');
  const usage = value.usage ? { prompt_tokens: value.usage.prompt_tokens, completion_tokens: value.usage.completion_tokens } : null;
  return [content, choice.finish_reason || null, usage, reasoning];
}

function outputsOf(p, value) {
  const buffers = [];
  try {
    let values;
    if (p.chat) values = chatOutputs(value);
    else if (p.outputs.length === 1) values = [toEngine(value, p.outputs[0], buffers)];
    else {
      if (!Array.isArray(value) || value.length !== p.outputs.length) {
        throw new OutputError(`is ${describe(value)}; it declares ${p.outputs.length} outputs, so it gives an array of ${p.outputs.length} values`);
      }
      values = value.map((v, i) => toEngine(v, p.outputs[i], buffers));
    }
    // toJson, not JSON.stringify: NaN would become null, a cycle a bare TypeError.
    const names = p.chat ? CHAT_OUTPUTS.map((o) => o.name) : p.outputs.map((o) => o.name);
    let json;
    try {
      json = `[${values.map((v, i) => toJson(v === undefined ? null : v, names[i])).join(',')}]`;
    } catch (err) {
      if (!(err instanceof BadRequestError)) throw err;
      throw new OutputError(`is not JSON data: ${err.message}`);
    }
    return { json, buffers };
  } catch (err) {
    if (err instanceof OutputError) {
      throw new OutputError(`The predictor \`${p.tag}\` returned a value that breaks its signature: ${err.message.replace(/^is /, 'it is ')}`);
    }
    throw err;
  }
}

/** The state of each running prediction, by its id. */
const running = new Map();

function reply(call, store, error, outputs) {
  const logs = store.text;
  store.text = '';
  native.predictorReply(call.reply, call.prediction, error, logs || null,
    outputs ? outputs.json : null, outputs ? outputs.buffers : null);
}

function failure(p, err, store) {
  if (err instanceof OutputError) return err.message;
  store.text += `${(err && err.stack) || String(err)}\n`;
  const described = err instanceof Error ? `${err.name}: ${err.message}` : String(err);
  return `The predictor \`${p.tag}\` threw ${described}`;
}

/** One step of a prediction, asked by the engine (see the top of this file). */
async function dispatch(p, call) {
  if (call.op === 'start') {
    const controller = new AbortController();
    const store = { text: '', signal: controller.signal };
    let args;
    try {
      const inputs = JSON.parse(call.json);
      args = {};
      for (const [name, value] of Object.entries(inputs)) args[name] = fromEngine(value, call.buffers);
    } catch (err) {
      reply(call, store, failure(p, err, store), null);
      return;
    }
    running.set(call.prediction, { args, store, controller, iterator: null, done: false });
    reply(call, store, null, null);
    return;
  }
  const state = running.get(call.prediction);
  if (call.op === 'cancel') {
    // The call was cancelled (no reply): the predictor's signal aborts.
    if (state && !state.done) state.controller.abort();
    return;
  }
  if (call.op === 'close') {
    running.delete(call.prediction);
    // Closed before its end: the consumer went away. A prediction that ended is not aborted.
    if (state && !state.done) state.controller.abort();
    if (state && state.iterator && !state.done) {
      state.done = true;
      try {
        await logsOf.run(state.store, () => state.iterator.return());
      } catch {
        // A generator that throws while closing: nobody is waiting for it.
      }
    }
    return;
  }
  if (!state) {
    native.predictorReply(call.reply, call.prediction, `The prediction of \`${p.tag}\` is gone`, null, null, null);
    return;
  }
  const { store } = state;
  try {
    if (state.done) {
      reply(call, store, null, null);
      return;
    }
    if (!p.generator) {
      const value = await logsOf.run(store, () => p.fn(state.args));
      state.done = true;
      reply(call, store, null, outputsOf(p, value));
      return;
    }
    if (!state.iterator) state.iterator = logsOf.run(store, () => p.fn(state.args));
    const step = await logsOf.run(store, () => state.iterator.next());
    if (step.done) {
      state.done = true;
      reply(call, store, null, null);
      return;
    }
    reply(call, store, null, outputsOf(p, step.value));
  } catch (err) {
    state.done = true;
    reply(call, store, failure(p, err, store), null);
  }
}

function register(nativeClient, p) {
  if (!p || typeof p.declaration !== 'string' || typeof p.fn !== 'function') {
    throw new TypeError(`${describe(p)} is not a predictor; make one with predictor({ tag, inputs, outputs }, fn)`);
  }
  patchConsole();
  try {
    nativeClient.registerPredictor(p.declaration, (call) => {
      dispatch(p, call).catch((err) => {
        // dispatch answers every call itself; this is a bug, so say it rather than hang.
        native.predictorReply(call.reply, call.prediction, `ingle: ${err && err.message}`, null, null, null);
      });
    });
  } catch (err) {
    const info = engineError(err);
    if (!info) throw err;
    throw new PredictorDefinitionError(`${p.functionName}: ${info.message}`, p.functionName, info.param);
  }
}

/** Inside a predictor (while its function runs, across its awaits): the AbortSignal of its
 * prediction, aborted once the call is cancelled (its caller's signal aborted, its stream
 * closed before its end), never after it ended; pass it on (`fetch(url, { signal })`) or ask
 * `signal.aborted` between steps. `undefined` outside a predictor. */
function predictionSignal() {
  const store = logsOf.getStore();
  return store ? store.signal : undefined;
}

module.exports = { Parameter, Annotations, predictor, register, PredictorDefinitionError, predictionSignal };
