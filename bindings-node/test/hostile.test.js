'use strict';
// Hostile and careless input: everything a caller can get wrong is an OpenAIError (a request's
// content a BadRequestError with status 400 naming the field, a client or request option an
// OpenAIError naming the option), found before any work starts, and the client keeps working.
// Fast: no generation here is longer than 4 tokens; most are 1.
const test = require('node:test');
const assert = require('node:assert/strict');
const { OpenAI, OpenAIError, APIError, BadRequestError, APIUserAbortError } = require('..');

const model = '@local/smollm2-135m-instruct';
const embedder = '@local/all-minilm-l6-v2';
const voice = '@local/piper-en-us-joe-medium';
const whisper = '@local/whisper-tiny-en';
const hi = [{ role: 'user', content: 'Hi' }];
const client = new OpenAI();

/** A normal (one-token) request succeeds. */
async function works() {
  const r = await client.chat.completions.create({ model, messages: hi, max_tokens: 1, temperature: 0 });
  assert.equal(r.usage.completion_tokens, 1);
}

/** Checks the error: its class, and for a bad request status 400 and `param`; never a bare
 * TypeError or napi error. */
function checkError(err, { Class, param, match }, label) {
  assert.ok(err instanceof Class, `${label}: expected ${Class.name}, got ${err && err.stack}`);
  assert.ok(err instanceof OpenAIError, `${label}: not an OpenAIError`);
  assert.equal(err.name, Class.name, label);
  if (Class === OpenAIError) {
    assert.ok(!(err instanceof APIError), `${label}: an option error is no APIError`);
  } else {
    assert.equal(err.status, 400, label);
    if (param instanceof RegExp) assert.match(err.param, param, label);
    else assert.equal(err.param, param, label);
    assert.equal(err.error.param, err.param, label);
    assert.equal(err.error.type, 'invalid_request_error', label);
  }
  if (match) assert.match(err.message, match, label);
  return true;
}

/** `action` (a function returning a promise) rejects, not throws, with the expected error;
 * nothing was generated; and then a normal request still succeeds. */
async function rejects(label, action, expected) {
  const before = await client.metrics(model);
  const start = Date.now();
  await assert.rejects(action, (err) => checkError(err, { Class: BadRequestError, ...expected }, label));
  assert.ok(Date.now() - start < 5000, `${label}: took ${Date.now() - start} ms`);
  const after = await client.metrics(model);
  assert.equal(after.generated_tokens, before.generated_tokens, `${label}: generation started`);
  assert.equal(after.active_requests + after.queued_requests, 0, `${label}: still running`);
  await works();
}

const chat = (params, options) => () =>
  client.chat.completions.create({ model, messages: hi, max_tokens: 4, ...params }, options);
const chatStream = (params, options) => chat({ stream: true, ...params }, options);

test('non-finite numbers anywhere are rejected, naming the field', async () => {
  const cases = [
    ['max_tokens NaN', { max_tokens: NaN }, 'max_tokens'],
    ['max_tokens Infinity', { max_tokens: Infinity }, 'max_tokens'],
    ['temperature NaN', { temperature: NaN }, 'temperature'],
    ['temperature -Infinity', { temperature: -Infinity }, 'temperature'],
    ['top_p NaN, streamed', { top_p: NaN, stream: true }, 'top_p'],
    ['max_completion_tokens NaN', { max_completion_tokens: NaN }, 'max_completion_tokens'],
    ['boxed NaN', { max_tokens: new Number(NaN) }, 'max_tokens'], // eslint-disable-line no-new-wrappers
    ['toJSON giving NaN', { temperature: { toJSON: () => NaN } }, 'temperature'],
    ['message content NaN', { messages: [{ role: 'user', content: NaN }] }, 'messages[0].content'],
    ['content part', { messages: [{ role: 'user', content: [{ type: 'text', text: Infinity }] }] },
      'messages[0].content[0].text'],
    ['stop item', { stop: ['x', NaN] }, 'stop[1]'],
    ['stream_options', { stream: true, stream_options: { include_usage: NaN } }, 'stream_options.include_usage'],
    ['logit_bias value', { logit_bias: { 42: -Infinity } }, 'logit_bias.42'],
  ];
  for (const [label, params, param] of cases) {
    await rejects(label, chat(params), { param, match: /finite number/ });
  }
  await rejects('completions max_tokens', () => client.completions.create({ model, prompt: 'Once', max_tokens: NaN }),
    { param: 'max_tokens', match: /`max_tokens` must be a finite number, not NaN/ });
  await rejects('completions prompt item', () => client.completions.create({ model, prompt: ['a', -Infinity] }),
    { param: 'prompt[1]' });
});

test('other values JSON cannot carry are rejected, naming the field', async () => {
  const circular = { role: 'user', content: 'Hi' };
  circular.self = circular;
  const loop = [];
  loop.push(loop);
  let deep = 'Hi';
  for (let i = 0; i < 200; i++) deep = [deep];
  const shared = { type: 'text', text: 'Hi' }; // the same object twice is no cycle: allowed
  const cases = [
    ['BigInt', { max_tokens: 4n }, 'max_tokens', /BigInt/],
    ['boxed BigInt', { seed: Object(1n) }, 'seed', /BigInt/],
    ['BigInt in a message', { messages: [{ role: 'user', content: 2n ** 70n }] }, 'messages[0].content', /BigInt/],
    ['function', { temperature: () => 0 }, 'temperature', /function/],
    ['function in a message', { messages: [{ role: 'user', content: () => 'Hi' }] }, 'messages[0].content', /function/],
    ['symbol', { user: Symbol('me') }, 'user', /symbol/],
    ['undefined in an array', { stop: ['x', undefined] }, 'stop[1]', /undefined/],
    ['undefined message', { messages: [undefined] }, 'messages[0]', /undefined/],
    ['a hole in an array', { messages: [, ...hi] }, 'messages[0]', /undefined/], // eslint-disable-line no-sparse-arrays
    ['circular object', { messages: [circular] }, 'messages[0].self', /circular/],
    ['circular array', { stop: loop }, 'stop[0]', /circular/],
    ['deep nesting', { messages: [{ role: 'user', content: deep }] }, /^messages\[0\]\.content(\[0\])+\[?…\(\d+ more characters\)$/, /100 levels/],
    ['Map', { logit_bias: new Map([[1, 2]]) }, 'logit_bias', /Map/],
    ['Set', { stop: new Set(['x']) }, 'stop', /Set/],
    ['typed array', { stop: new Float32Array(2) }, 'stop', /typed array/],
    ['lone surrogate', { messages: [{ role: 'user', content: 'a\uD83D' }] }, 'messages[0].content', /surrogate/],
    ['lone surrogate in a key', { messages: [{ role: 'user', content: 'Hi', ['\uDC00']: 1 }] },
      'messages[0].\\uDC00', /surrogate/],
    ['stream not a boolean', { stream: 'yes' }, 'stream', /boolean/],
    ['stream NaN', { stream: NaN }, 'stream', /boolean/],
  ];
  for (const [label, params, param, match] of cases) {
    await rejects(label, chat(params), { param, match });
  }
  await rejects('streamed', chatStream({ temperature: 1n }), { param: 'temperature', match: /BigInt/ });
  const r = await client.chat.completions.create({
    model, max_tokens: 4, messages: [{ role: 'user', content: [shared, shared] }], user: undefined,
  });
  assert.equal(r.object, 'chat.completion');
});

test('a body that is not an object', async () => {
  for (const [label, body, words] of [
    ['missing', undefined, /undefined/], ['null', null, /null/], ['a string', 'x', /a string/],
    ['a number', 42, /a number/], ['an array', [], /an array/], ['a function', () => ({}), /a function/],
  ]) {
    await rejects(`chat ${label}`, () => client.chat.completions.create(body), { param: null, match: words });
    await rejects(`completions ${label}`, () => client.completions.create(body), { param: null, match: words });
    await rejects(`embeddings ${label}`, () => client.embeddings.create(body), { param: null, match: words });
    await rejects(`predictions ${label}`, () => client.predictions.create(body), { param: null, match: words });
    await rejects(`speech ${label}`, () => client.audio.speech.create(body), { param: null, match: words });
    await rejects(`transcriptions ${label}`, () => client.audio.transcriptions.create(body), { param: null, match: words });
    await rejects(`translations ${label}`, () => client.audio.translations.create(body), { param: null, match: words });
  }
  await rejects('no arguments', () => client.chat.completions.create(), { param: null, match: /chat\.completions\.create/ });
});

test('bad request options are OpenAIErrors naming the option, before anything starts', async () => {
  const option = (label, action, match) =>
    rejects(label, action, { Class: OpenAIError, match });
  for (const signal of ['nope', 42, {}, { aborted: false }, new AbortController()]) {
    const label = `signal ${typeof signal}`;
    await option(`chat ${label}`, chat({}, { signal }), /options\.signal must be an AbortSignal/);
    await option(`chat stream ${label}`, chatStream({}, { signal }), /options\.signal/);
    await option(`completions ${label}`,
      () => client.completions.create({ model, prompt: 'Once', max_tokens: 4 }, { signal }), /options\.signal/);
    await option(`embeddings ${label}`,
      () => client.embeddings.create({ model: embedder, input: 'a' }, { signal }), /options\.signal/);
    await option(`speech ${label}`,
      () => client.audio.speech.create({ model: voice, input: 'a', voice: 'joe' }, { signal }), /options\.signal/);
    await option(`transcriptions ${label}`,
      () => client.audio.transcriptions.create({ model: whisper, file: Buffer.alloc(4) }, { signal }), /options\.signal/);
    await option(`transcriptions stream ${label}`,
      () => client.audio.transcriptions.create({ model: whisper, file: Buffer.alloc(4), stream: true }, { signal }),
      /options\.signal/);
    await option(`translations ${label}`,
      () => client.audio.translations.create({ model: whisper, file: Buffer.alloc(4) }, { signal }), /options\.signal/);
    await option(`predictions stream ${label}`, async () => {
      for await (const _ of client.predictions.stream({ tag: model, inputs: { prompt: 'a' } }, { signal }));
    }, /options\.signal/);
  }
  await option('options a number', chat({}, 42), /options must be an object/);
  await option('options a string', chat({}, 'fast'), /options must be an object/);
  // null and undefined mean no options; an AbortSignal from elsewhere (duck-typed) is accepted.
  await works();
  await client.chat.completions.create({ model, messages: hi, max_tokens: 1 }, null);
  await client.chat.completions.create({ model, messages: hi, max_tokens: 1 }, { signal: null, timeout: 5 });
  const foreign = { aborted: true, addEventListener() {}, removeEventListener() {} };
  await assert.rejects(chat({}, { signal: foreign }), APIUserAbortError);
});

test('missing or wrong-typed arguments of every method', async () => {
  for (const bad of [undefined, 42, {}, null]) {
    await rejects(`models.retrieve(${String(bad)})`, () => client.models.retrieve(bad),
      { param: 'model', match: /models\.retrieve.*`model` must be a string/ });
    await rejects(`metrics(${String(bad)})`, () => client.metrics(bad), { param: 'model', match: /must be a string/ });
  }
  await rejects('models.retrieve lone surrogate', () => client.models.retrieve('\uD800'), { param: 'model' });
  for (const [label, body, param] of [
    ['predictions no tag', {}, 'tag'],
    ['predictions tag 1', { tag: 1 }, 'tag'],
    ['predictions tag null', { tag: null, inputs: {} }, 'tag'],
    ['predictions inputs a string', { tag: model, inputs: 'x' }, 'inputs'],
    ['predictions inputs null', { tag: model, inputs: null }, 'inputs'],
    ['predictions inputs an array', { tag: model, inputs: [] }, 'inputs'],
    ['predictions inputs NaN', { tag: model, inputs: { prompt: 'a', max_tokens: NaN } }, 'max_tokens'],
    ['predictions nested', { tag: model, inputs: { messages: [{ role: 'user', content: Infinity }] } },
      'messages[0].content'],
    ['predictions BigInt', { tag: model, inputs: { prompt: 'a', seed: 1n } }, 'seed'],
  ]) {
    await rejects(label, () => client.predictions.create(body), { param });
    await rejects(`${label} (stream)`, async () => {
      for await (const _ of client.predictions.stream(body));
    }, { param });
  }
  await rejects('predictions.stream no body', async () => {
    for await (const _ of client.predictions.stream());
  }, { param: null });
  for (const [label, params, param] of [
    ['embeddings {}', {}, 'model'],
    ['embeddings input NaN', { model: embedder, input: ['a', NaN] }, 'input[1]'],
    ['embeddings dimensions NaN', { model: embedder, input: 'a', dimensions: NaN }, 'dimensions'],
    ['embeddings input undefined item', { model: embedder, input: ['a', undefined] }, 'input[1]'],
    ['embeddings model a function', { model() {}, input: 'a' }, 'model'],
  ]) {
    await rejects(label, () => client.embeddings.create(params), { param });
  }
  for (const [label, params, param] of [
    ['speech {}', {}, 'model'],
    ['speech input a lone surrogate', { model: voice, input: 'a\uD800', voice: 'joe' }, 'input'],
    ['speech speed Infinity', { model: voice, input: 'a', voice: 'joe', speed: Infinity }, 'speed'],
    ['speech speed BigInt', { model: voice, input: 'a', voice: 'joe', speed: 1n }, 'speed'],
    ['speech voice an object', { model: voice, input: 'a', voice: { id: 'joe' } }, 'voice'],
    ['speech input an array', { model: voice, input: ['a'], voice: 'joe' }, 'input'],
  ]) {
    await rejects(label, () => client.audio.speech.create(params), { param });
  }
  const file = Buffer.alloc(4);
  for (const [label, params, param] of [
    ['transcriptions {}', {}, 'file'],
    ['transcriptions file a function', { model: whisper, file() {} }, 'file'],
    ['transcriptions file a symbol', { model: whisper, file: Symbol('a') }, 'file'],
    ['transcriptions model a function', { model() {}, file }, 'model'],
    ['transcriptions language a lone surrogate', { model: whisper, file, language: 'e\uDC00' }, 'language'],
    ['transcriptions prompt a lone surrogate', { model: whisper, file, prompt: '\uD800' }, 'prompt'],
    ['transcriptions temperature Infinity', { model: whisper, file, temperature: Infinity }, 'temperature'],
    ['transcriptions temperature BigInt', { model: whisper, file, temperature: 1n }, 'temperature'],
    ['transcriptions granularities undefined item', { model: whisper, file, timestamp_granularities: [undefined] },
      'timestamp_granularities[0]'],
    ['transcriptions samples a Map', { model: whisper, file: { samples: new Map(), sample_rate: 16000 } }, 'file.samples'],
    ['transcriptions sample_rate BigInt', { model: whisper, file: { samples: new Float32Array(8), sample_rate: 16000n } },
      'file.sample_rate'],
    ['transcriptions stream NaN', { model: whisper, file, stream: NaN }, 'stream'],
    ['translations {}', {}, 'file'],
    ['translations model NaN', { model: NaN, file }, 'model'],
  ]) {
    const method = label.startsWith('translations') ? client.audio.translations : client.audio.transcriptions;
    await rejects(label, () => method.create(params), { param });
  }
  assert.equal((await client.embeddings.create({ model: embedder, input: 'still works' })).data.length, 1);
});

test('bad client options are OpenAIErrors naming the option', async () => {
  for (const [label, options, match] of [
    ['null', null, /options must be an object, not null/],
    ['a number', 42, /options must be an object/],
    ['a string', 'ingle.toml', /options must be an object/],
    ['config a number', { config: 42 }, /options\.config must be a path string, not a number/],
    ['config an object JSON cannot write', { config: { n: 1n } }, /options\.config cannot be written as JSON/],
    ['modelsDir a number', { modelsDir: 5 }, /options\.modelsDir must be a path string/],
    ['config a lone surrogate', { config: 'a\uD800.toml' }, /options\.config contains a lone UTF-16 surrogate/],
  ]) {
    assert.throws(() => new OpenAI(options), (err) => checkError(err, { Class: OpenAIError, match }, label));
  }
  // The config as an object is read as the config file would be: its mistakes are the engine's
  // 400s, naming the field.
  assert.throws(
    () => new OpenAI({ config: { predictors: 5 } }),
    (err) => checkError(err, { Class: BadRequestError, param: 'config', match: /predictors/ }, 'config an object that is no config'),
  );
  // Ignored openai options, and explicit nulls, are fine.
  const other = new OpenAI({ apiKey: 'unused', baseURL: 'http://nowhere', config: null, modelsDir: undefined });
  assert.equal((await other.models.retrieve(model)).id, model);
  await works();
});
