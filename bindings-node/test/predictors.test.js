'use strict';
// Predictors written in JavaScript, served through the OpenAI methods and `predictions` like the
// built-in models.
const test = require('node:test');
const assert = require('node:assert/strict');
const {
  OpenAI, Parameter, predictor, predictionSignal, PredictorDefinitionError, BadRequestError, InternalServerError,
  APIUserAbortError,
} = require('..');
const { toFile } = require('openai');

const RATE = 24000;
let finallyRan = false;

const echo = predictor(
  {
    tag: '@test/echo',
    description: 'Echoes the last message word by word.',
    inputs: [
      Parameter.ChatMessages({ name: 'messages' }),
      Parameter.Temperature({ name: 'temperature', default: 1, min: 0, max: 2 }),
    ],
  },
  async function* echoWords({ messages }) {
    console.log('echoing', messages.length, 'messages');
    try {
      for (const word of messages.at(-1).content.split(' ')) {
        await new Promise((r) => setImmediate(r));
        yield `${word} `;
      }
    } finally {
      finallyRan = true;
    }
  },
);

const chunks = predictor({ tag: '@test/chunks', inputs: [Parameter.ChatMessages({ name: 'messages' })] },
  function* chunked({ messages }) {
    const words = messages.at(-1).content.split(' ');
    for (const word of words) yield { choices: [{ index: 0, delta: { content: word }, finish_reason: null }] };
    yield { choices: [{ index: 0, delta: {}, finish_reason: 'length' }], usage: { prompt_tokens: 7, completion_tokens: words.length } };
  });

function unitRow(text, dims) {
  const row = new Float32Array(dims);
  for (let i = 0; i < dims; i++) row[i] = Math.sin(text.length + i * (text.charCodeAt(0) || 1));
  const norm = Math.hypot(...row);
  return row.map((x) => x / norm);
}

const embed = predictor({
  tag: '@test/embed',
  inputs: [
    Parameter.Embedding({ name: 'texts', description: 'Texts.' }),
    Parameter.EmbeddingDims({ name: 'dims', max: 16, default: 16 }),
  ],
  outputs: [Parameter.Embedding({ name: 'embeddings' })],
}, ({ texts, dims }) => texts.map((t) => unitRow(t, 16).slice(0, dims)));

const FREQUENCY = { low: 220, high: 880 };
const tone = predictor({
  tag: '@test/tone',
  // The voice first and oddly named: found by its annotation.
  inputs: [
    Parameter.AudioVoice({ name: 'v', voices: ['low', 'high'] }),
    Parameter.Generic({ name: 'words', type: 'string', description: 'Text to speak.' }),
    Parameter.AudioSpeed({ name: 'pace', default: 1, min: 0.25, max: 4 }),
  ],
  outputs: [Parameter.Audio({ name: 'audio', sample_rate: RATE })],
}, function* sine({ v, words, pace }) {
  const n = Math.round((RATE * 0.25) / pace);
  for (const _ of words.split(' ')) {
    const samples = new Float32Array(n);
    for (let i = 0; i < n; i++) samples[i] = 0.5 * Math.sin((2 * Math.PI * FREQUENCY[v] * i) / RATE);
    yield samples;
  }
});

const heard = {};
const listen = predictor({
  tag: '@test/listen',
  inputs: [
    Parameter.Audio({ name: 'audio', sample_rate: 8000 }),
    Parameter.TranscriptionLanguage({ name: 'language', required: false }),
  ],
  outputs: [Parameter.Generic({ name: 'text', type: 'string' })],
}, async function* hear({ audio }) {
  heard.samples = audio.length;
  heard.float32 = audio instanceof Float32Array;
  yield `${(audio.length / 8000).toFixed(2)} seconds`;
  yield ` at peak ${Math.max(...audio.map(Math.abs)).toFixed(1)}`;
});

// A transcription predictor that translates (its TranscriptionTask input) and reports the
// language it heard (a TranscriptionLanguage output).
const tasks = [];
const interpret = predictor({
  tag: '@test/interpret',
  inputs: [
    Parameter.Audio({ name: 'audio', sample_rate: 16000 }),
    Parameter.TranscriptionTask({ name: 'task', default: 'transcribe' }),
  ],
  outputs: [
    Parameter.TextDelta({ name: 'text' }),
    Parameter.TranscriptionSegment({ name: 'segment', required: false }),
    Parameter.TranscriptionLanguage({ name: 'heard', required: false }),
  ],
}, async function* interpretIt({ task }) {
  tasks.push(task);
  yield [task === 'translate' ? 'Hello.' : 'Bonjour.', null, 'fr'];
});

const add = predictor({
  tag: '@test/add',
  inputs: [Parameter.Generic({ name: 'a', type: 'integer' }), Parameter.Numeric({ name: 'b', type: 'integer', default: 1, min: 0, max: 100 })],
  outputs: [Parameter.Generic({ name: 'sum', type: 'integer' })],
}, ({ a, b }) => a + b);
const asyncAdd = predictor({ tag: '@test/async-add', inputs: [Parameter.Generic({ name: 'a', type: 'integer' })], outputs: [Parameter.Generic({ name: 'sum', type: 'integer' })] },
  async ({ a }) => { await new Promise((r) => setTimeout(r, 5)); return a + 1; });
const count = predictor({ tag: '@test/count', inputs: [Parameter.Generic({ name: 'n', type: 'integer' })], outputs: [Parameter.Generic({ name: 'i', type: 'integer' })] },
  function* counting({ n }) { for (let i = 1; i <= n; i++) yield i; });
const asyncCount = predictor({ tag: '@test/async-count', inputs: [Parameter.Generic({ name: 'n', type: 'integer' })], outputs: [Parameter.Generic({ name: 'i', type: 'integer' })] },
  async function* counting({ n }) { for (let i = 1; i <= n; i++) { await new Promise((r) => setTimeout(r, 1)); yield i; } });
const fails = predictor({ tag: '@test/fails', inputs: [Parameter.Generic({ name: 'after', type: 'integer' })], outputs: [Parameter.Generic({ name: 'n', type: 'integer' })] },
  function* failing({ after }) {
    yield 1;
    if (after) {
      console.log('about to fail');
      throw new RangeError(`failed after ${after}`);
    }
  });
const wrongShape = predictor({ tag: '@test/wrong-shape', inputs: [Parameter.Embedding({ name: 'texts' })], outputs: [Parameter.Embedding({ name: 'e' })] },
  ({ texts }) => [...texts, 'extra'].map(() => new Float32Array(4)));
const wrongType = predictor({ tag: '@test/wrong-type', inputs: [Parameter.Generic({ name: 'text', type: 'string' }), Parameter.AudioVoice({ name: 'voice', voices: ['a'] })], outputs: [Parameter.Audio({ name: 'audio', sample_rate: RATE })] },
  () => new Float64Array(100));

const client = new OpenAI({ predictors: [echo, chunks, embed, tone, listen, interpret, add, asyncAdd, count, asyncCount, fails, wrongShape, wrongType] });
const model = '@local/smollm2-135m-instruct';
const persona = predictor({
  tag: '@test/persona',
  inputs: [Parameter.ChatMessages({ name: 'messages' }), Parameter.MaxTokens({ name: 'max_tokens', default: 32 })],
}, async function* withPersona({ messages, max_tokens }) {
  const stream = await client.chat.completions.create({
    model, messages: [{ role: 'system', content: 'Be brief.' }, ...messages], max_tokens, temperature: 0, stream: true,
  });
  for await (const chunk of stream) yield chunk;
});
client.predictors.register(persona);

function wav(samples, rate) {
  const data = Buffer.alloc(44 + samples.length * 2);
  data.write('RIFF', 0); data.writeUInt32LE(36 + samples.length * 2, 4); data.write('WAVEfmt ', 8);
  data.writeUInt32LE(16, 16); data.writeUInt16LE(1, 20); data.writeUInt16LE(1, 22); data.writeUInt32LE(rate, 24);
  data.writeUInt32LE(rate * 2, 28); data.writeUInt16LE(2, 32); data.writeUInt16LE(16, 34); data.write('data', 36);
  data.writeUInt32LE(samples.length * 2, 40);
  samples.forEach((x, i) => data.writeInt16LE(Math.round(Math.max(-1, Math.min(1, x)) * 32767), 44 + 2 * i));
  return data;
}

function readWav(bytes) {
  const b = Buffer.from(bytes);
  const rate = b.readUInt32LE(24);
  const samples = new Float32Array((b.length - 44) / 2).map((_, i) => b.readInt16LE(44 + 2 * i) / 32768);
  return { samples, rate };
}

function zeroCrossings(samples) {
  let n = 0;
  for (let i = 1; i < samples.length; i++) n += (samples[i - 1] < 0) !== (samples[i] < 0);
  return n;
}

const hello = [{ role: 'user', content: 'hello big world' }];

test('a chat predictor: whole, streamed and through predictions', async () => {
  const r = await client.chat.completions.create({ model: '@test/echo', messages: hello });
  assert.equal(r.choices[0].message.content, 'hello big world ');
  assert.equal(r.choices[0].finish_reason, 'stop');
  const deltas = [];
  for await (const c of await client.chat.completions.create({ model: '@test/echo', messages: hello, stream: true })) {
    if (c.choices.length) deltas.push(c.choices[0].delta.content);
  }
  assert.deepEqual(deltas, ['', 'hello ', 'big ', 'world ', undefined]);
  const p = await client.predictions.create({ tag: '@test/echo', inputs: { messages: hello } });
  assert.deepEqual(p.results, ['hello big world ', null, null, null]);
  assert.equal(p.logs, 'echoing 1 messages\n');
  const parts = [];
  for await (const q of client.predictions.stream({ tag: '@test/echo', inputs: { messages: hello } })) parts.push(q.results[0]);
  assert.deepEqual(parts, ['hello ', 'big ', 'world ']);
  await assert.rejects(client.chat.completions.create({ model: '@test/echo', messages: hello, top_p: 0.5 }), (e) => e instanceof BadRequestError && e.param === 'top_p');
  await assert.rejects(client.chat.completions.create({ model: '@test/echo', messages: hello, temperature: 3 }), (e) => e.param === 'temperature');
});

test('a chat predictor yielding chunks gives their finish reason and usage', async () => {
  const r = await client.chat.completions.create({ model: '@test/chunks', messages: [{ role: 'user', content: 'one two' }] });
  assert.equal(r.choices[0].message.content, 'onetwo');
  assert.equal(r.choices[0].finish_reason, 'length');
  assert.deepEqual([r.usage.prompt_tokens, r.usage.completion_tokens, r.usage.total_tokens], [7, 2, 9]);
});

test('breaking out of a stream runs the generator\'s finally', async () => {
  finallyRan = false;
  const stream = await client.chat.completions.create({ model: '@test/echo', messages: [{ role: 'user', content: 'a b c d e f g' }], stream: true });
  for await (const c of stream) if (c.choices.length && c.choices[0].delta.content === 'b ') break;
  const deadline = Date.now() + 2000;
  while (!finallyRan && Date.now() < deadline) await new Promise((r) => setTimeout(r, 5));
  assert.ok(finallyRan, 'the generator was not closed');
});

test('a predictor waiting on its own await hears its call cancelled through predictionSignal()', async () => {
  // It waits a minute on a timer of its own, listening to its prediction's signal; the caller
  // aborts after 100 ms. Before, the abort rejected the caller at once but the predictor waited on.
  let heard = null;
  const waits = predictor({ tag: '@test/waits', inputs: [Parameter.Generic({ name: 'ms', type: 'integer' })], outputs: [Parameter.Generic({ name: 'waited', type: 'integer' })] },
    async ({ ms }) => {
      const signal = predictionSignal();
      await new Promise((resolve) => {
        const timer = setTimeout(resolve, ms);
        signal.addEventListener('abort', () => {
          clearTimeout(timer);
          heard = Date.now();
          resolve();
        });
      });
      return ms;
    });
  const own = new OpenAI();
  own.predictors.register(waits);
  assert.equal(predictionSignal(), undefined, 'outside a predictor');
  const controller = new AbortController();
  const started = Date.now();
  setTimeout(() => controller.abort(), 100);
  await assert.rejects(own.predictions.create({ tag: '@test/waits', inputs: { ms: 60000 } }, { signal: controller.signal }),
    APIUserAbortError);
  const deadline = Date.now() + 5000;
  while (heard === null && Date.now() < deadline) await new Promise((r) => setTimeout(r, 5));
  assert.ok(heard !== null, 'the predictor never heard of the abort');
  assert.ok(heard - started < 5000, `heard after ${heard - started} ms`);
  // Not cancelled, it runs to its end, and its signal is not aborted after it either.
  const heardFirst = heard;
  const p = await own.predictions.create({ tag: '@test/waits', inputs: { ms: 10 } });
  assert.deepEqual(p.results, [10]);
  await new Promise((r) => setTimeout(r, 50));
  assert.equal(heard, heardFirst, 'a prediction that ended had its signal aborted');
});

test('a predictor calls a model through the client', async () => {
  const r = await client.chat.completions.create({ model: '@test/persona', messages: [{ role: 'user', content: 'Name the capital of France.' }], max_tokens: 12 });
  assert.match(r.choices[0].message.content, /Paris/);
});

test('an embedding predictor (Float32Array rows)', async () => {
  const r = await client.embeddings.create({ model: '@test/embed', input: ['alpha', 'beta'] });
  assert.deepEqual(r.data.map((d) => d.index), [0, 1]);
  const expected = unitRow('alpha', 16);
  r.data[0].embedding.forEach((x, i) => assert.ok(Math.abs(x - expected[i]) < 1e-6));
  const four = await client.embeddings.create({ model: '@test/embed', input: 'alpha', dimensions: 4 });
  assert.equal(four.data[0].embedding.length, 4);
  await assert.rejects(client.embeddings.create({ model: '@test/embed', input: 'alpha', dimensions: 17 }), (e) => e.param === 'dimensions');
  const p = await client.predictions.create({ tag: '@test/embed', inputs: { texts: ['a', 'b', 'c'] } });
  assert.deepEqual([p.results[0].dtype, p.results[0].shape], ['float32', [3, 16]]);
});

test('a speech predictor: its voices, speed, the built-in encoders and streaming', async () => {
  const low = readWav(await (await client.audio.speech.create({ model: '@test/tone', voice: 'low', input: 'one two', response_format: 'wav' })).arrayBuffer());
  assert.equal(low.rate, RATE);
  assert.equal(low.samples.length, RATE / 2);
  assert.ok(Math.abs(zeroCrossings(low.samples.subarray(0, RATE / 4)) - 110) <= 2);
  const high = readWav(await (await client.audio.speech.create({ model: '@test/tone', voice: 'high', input: 'one', response_format: 'wav' })).arrayBuffer());
  assert.ok(Math.abs(zeroCrossings(high.samples) - 440) <= 2);
  const fast = readWav(await (await client.audio.speech.create({ model: '@test/tone', voice: 'low', input: 'one two', response_format: 'wav', speed: 2 })).arrayBuffer());
  assert.equal(fast.samples.length, RATE / 4);
  for (const format of ['mp3', 'opus', 'aac', 'flac']) {
    const bytes = await (await client.audio.speech.create({ model: '@test/tone', voice: 'low', input: 'a b', response_format: format })).arrayBuffer();
    assert.ok(bytes.byteLength > 100, format);
  }
  const pcm = await client.audio.speech.create({ model: '@test/tone', voice: 'high', input: 'a b c', response_format: 'pcm' });
  let total = 0;
  for await (const part of pcm.body) total += part.length;
  assert.equal(total, 3 * 2 * RATE / 4);
  await assert.rejects(client.audio.speech.create({ model: '@test/tone', voice: 'middle', input: 'a' }), (e) => e.param === 'voice');
  const p = await client.predictions.create({ tag: '@test/tone', inputs: { v: 'low', words: 'a b c' } });
  assert.equal(p.results[0].sample_rate, RATE);
  assert.equal(Buffer.from(p.results[0].data, 'base64').length, 4 * 3 * RATE / 4);
});

test('a transcription predictor gets samples at its rate', async () => {
  const samples = new Float32Array(32000).map((_, i) => 0.5 * Math.sin((2 * Math.PI * 300 * i) / 16000));
  const file = await toFile(wav(samples, 16000), 'two.wav');
  const r = await client.audio.transcriptions.create({ model: '@test/listen', file });
  assert.equal(r.text, '2.00 seconds at peak 0.5');
  assert.deepEqual(heard, { samples: 16000, float32: true });
  const events = [];
  for await (const e of await client.audio.transcriptions.create({ model: '@test/listen', file: await toFile(wav(samples, 16000), 'two.wav'), stream: true })) events.push(e.type);
  assert.deepEqual(events, ['transcript.text.delta', 'transcript.text.delta', 'transcript.text.done']);
  // Through predictions, with the samples beside the JSON.
  const p = await client.predictions.create({ tag: '@test/listen', inputs: { audio: { samples: new Float32Array(4000), sample_rate: 8000 } } });
  assert.deepEqual(p.results, ['0.50 seconds at peak 0.0']);
  const parts = [];
  for await (const q of client.predictions.stream({ tag: '@test/listen', inputs: { audio: { samples: new Float32Array(8000), sample_rate: 8000 } } })) parts.push(q.results[0]);
  assert.deepEqual(parts, ['1.00 seconds', ' at peak 0.0']);
  const resampled = await client.predictions.create({ tag: '@test/listen', inputs: { audio: { samples: new Float32Array(88200), sample_rate: 44100, channels: 2 } } });
  assert.deepEqual(resampled.results, ['1.00 seconds at peak 0.0']);
  await assert.rejects(client.predictions.create({ tag: '@test/listen', inputs: { audio: { samples: new Float32Array(10), sample_rate: 10 } } }), (e) => e.param === 'audio');
});

test('a transcription predictor with a task input translates and reports its language', async () => {
  const file = async () => toFile(wav(new Float32Array(16000), 16000), 'one.wav');
  const heard = await client.audio.transcriptions.create({ model: '@test/interpret', file: await file(), response_format: 'verbose_json' });
  assert.equal(heard.text, 'Bonjour.');
  assert.equal(heard.language, 'french'); // its output's `fr`, as OpenAI names it
  const json = await client.audio.translations.create({ model: '@test/interpret', file: await file() });
  assert.deepEqual(json, { text: 'Hello.' });
  const verbose = await client.audio.translations.create({ model: '@test/interpret', file: await file(), response_format: 'verbose_json' });
  assert.equal(verbose.task, 'translate');
  assert.equal(verbose.language, 'english');
  assert.deepEqual(tasks, ['transcribe', 'translate', 'translate']);
  // One without a task input serves transcriptions only.
  await assert.rejects(client.audio.translations.create({ model: '@test/listen', file: await file() }),
    (e) => e instanceof BadRequestError && e.param === 'model' && /TranscriptionTask/.test(e.message));
});

test('the four cases: eager and generator, create and stream', async () => {
  const collect = async (tag, inputs) => {
    const out = [];
    for await (const p of client.predictions.stream({ tag, inputs })) out.push(p.results);
    return out;
  };
  assert.deepEqual((await client.predictions.create({ tag: '@test/add', inputs: { a: 2 } })).results, [3]);
  assert.deepEqual(await collect('@test/add', { a: 2, b: 5 }), [[7]]);
  assert.deepEqual(await collect('@test/count', { n: 3 }), [[1], [2], [3]]);
  assert.deepEqual((await client.predictions.create({ tag: '@test/count', inputs: { n: 3 } })).results, [3]);
  assert.deepEqual((await client.predictions.create({ tag: '@test/async-add', inputs: { a: 2 } })).results, [3]);
  assert.deepEqual(await collect('@test/async-add', { a: 1 }), [[2]]);
  assert.deepEqual(await collect('@test/async-count', { n: 3 }), [[1], [2], [3]]);
  assert.deepEqual((await client.predictions.create({ tag: '@test/async-count', inputs: { n: 4 } })).results, [4]);
  for (const [inputs, param] of [[{}, 'a'], [{ a: 'x' }, 'a'], [{ a: 1, b: 101 }, 'b']]) {
    await assert.rejects(client.predictions.create({ tag: '@test/add', inputs }), (e) => e.param === param);
  }
});

test('many predictors awaiting the client and libuv\'s pool at once do not deadlock', { timeout: 60000 }, async () => {
  const fsp = require('node:fs/promises');
  const nested = predictor({ tag: '@test/nested', inputs: [Parameter.Generic({ name: 'a', type: 'integer' })], outputs: [Parameter.Generic({ name: 'sum', type: 'integer' })] },
    async ({ a }) => {
      await fsp.readFile(__filename); // libuv's pool
      const inner = await client.predictions.create({ tag: '@test/add', inputs: { a } }); // the client
      return inner.results[0];
    });
  client.predictors.register(nested);
  const results = await Promise.all(Array.from({ length: 12 }, (_, a) => client.predictions.create({ tag: '@test/nested', inputs: { a } })));
  assert.deepEqual(results.map((p) => p.results[0]), Array.from({ length: 12 }, (_, a) => a + 1));
});

test('the event loop keeps running while predictors run', async () => {
  let ticks = 0;
  const timer = setInterval(() => { ticks++; }, 1);
  await Promise.all(Array.from({ length: 8 }, (_, i) => client.predictions.create({ tag: '@test/async-count', inputs: { n: 20 + i } })));
  clearInterval(timer);
  assert.ok(ticks > 10, `${ticks} ticks`);
});

test('an exception fails the prediction with its stack in logs; the client stays usable', async () => {
  const p = await client.predictions.create({ tag: '@test/fails', inputs: { after: 1 } });
  assert.equal(p.results, null);
  assert.equal(p.error.type, 'server_error');
  assert.match(p.error.message, /`@test\/fails` threw RangeError: failed after 1/);
  assert.match(p.logs, /^about to fail\nRangeError: failed after 1\n {4}at .*failing .*predictors\.test\.js/);
  await assert.rejects(client.chat.completions.create({ model: '@test/persona', messages: hello, max_tokens: 0 }), (e) => e instanceof InternalServerError && /@test\/persona/.test(e.message));
  assert.deepEqual((await client.predictions.create({ tag: '@test/fails', inputs: { after: 0 } })).results, [1]);
});

test('outputs that break the signature fail clearly', async () => {
  await assert.rejects(client.embeddings.create({ model: '@test/wrong-shape', input: ['a', 'b'] }), (e) => e instanceof InternalServerError && /3 embeddings for 2 texts/.test(e.message));
  await assert.rejects(client.audio.speech.create({ model: '@test/wrong-type', voice: 'a', input: 'x' }), (e) => e instanceof InternalServerError && /@test\/wrong-type/.test(e.message) && /Float64Array/.test(e.message));
});

test('outputs JSON cannot carry (NaN, a cycle, deep nesting) fail the prediction, naming where', async () => {
  const shaped = predictor({ tag: '@test/shaped', inputs: [Parameter.Generic({ name: 'kind', type: 'string' })], outputs: [Parameter.Generic({ name: 'value', type: 'object' })] },
    ({ kind }) => {
      if (kind === 'nan') return { x: [1, NaN] };
      if (kind === 'inf') return { x: -Infinity };
      if (kind === 'cycle') { const o = {}; o.self = o; return o; }
      if (kind === 'deep') { let v = []; for (let i = 0; i < 10000; i++) v = [v]; return { v }; }
      return { ok: [1, 2.5] };
    });
  client.predictors.register(shaped);
  const cases = { nan: /`value\.x\[1\]` must be a finite number, not NaN/, inf: /`value\.x` must be a finite number, not -Infinity/, cycle: /`value\.self` refers back/, deep: /nested more than \d+ levels deep/ };
  for (const [kind, message] of Object.entries(cases)) {
    const p = await client.predictions.create({ tag: '@test/shaped', inputs: { kind } });
    assert.equal(p.results, null, kind);
    assert.match(p.error.message, /`@test\/shaped`/, kind);
    assert.match(p.error.message, message, kind);
  }
  assert.deepEqual((await client.predictions.create({ tag: '@test/shaped', inputs: { kind: 'ok' } })).results, [{ ok: [1, 2.5] }]);
});

test('registration rules name the function and the parameter', () => {
  const rejected = (spec, fn) => {
    try {
      predictor(spec, fn);
    } catch (e) {
      assert.ok(e instanceof PredictorDefinitionError, String(e));
      return e;
    }
    throw new Error('accepted');
  };
  const audioOut = [Parameter.Audio({ name: 'audio', sample_rate: 8000 })];
  const text = Parameter.Generic({ name: 'text', type: 'string' });
  let e = rejected({ tag: '@t/x', inputs: [text, Parameter.AudioVoice({ name: 'voice', voices: ['a'], default: 'a' })], outputs: audioOut }, function speak() {});
  assert.equal(e.param, 'voice');
  assert.equal(e.functionName, 'speak');
  assert.match(e.message, /^speak: /);
  e = rejected({ tag: '@t/x', inputs: [text, Parameter.AudioVoice({ name: 'voice', voices: ['a'] }), Parameter.AudioSpeed({ name: 's' })], outputs: audioOut }, () => {});
  assert.equal(e.param, 's');
  e = rejected({ tag: '@t/x', inputs: [Parameter.AudioVoice({ name: 'voice', voices: ['a'] })], outputs: audioOut }, () => {});
  assert.match(e.message, /text to speak/);
  e = rejected({ tag: '@t/x', inputs: [Parameter.Embedding({ name: 't' }), Parameter.Generic({ name: 'x', type: 'string' })], outputs: [Parameter.Embedding({ name: 'e' })] }, () => {});
  assert.equal(e.param, 'x');
  e = rejected({ tag: '@t/x', inputs: [Parameter.Embedding({ name: 't' }), Parameter.EmbeddingDims({ name: 'd', max: 4 })], outputs: [Parameter.Embedding({ name: 'e' })] }, () => {});
  assert.equal(e.param, 'd');
  e = rejected({ tag: '@t/x', inputs: [Parameter.ChatMessages({ name: 'm' }), Parameter.Generic({ name: 'style', type: 'string' })] }, () => {});
  assert.equal(e.param, 'style');
  e = rejected({ tag: '@t/x', inputs: [Parameter.ChatMessages({ name: 'm', required: false })] }, () => {});
  assert.equal(e.param, 'm');
  e = rejected({ tag: '@t/x', inputs: [Parameter.Audio({ name: 'a', sample_rate: 16000 })], outputs: [Parameter.Generic({ name: 'n', type: 'integer' })] }, () => {});
  assert.equal(e.param, 'outputs');
  e = rejected({ tag: '@t/x', inputs: [Parameter.Generic({ name: 'x', type: 'complex' })], outputs: [Parameter.Generic({ name: 'n', type: 'integer' })] }, () => {});
  assert.equal(e.param, 'x');
  e = rejected({ tag: 'has space', outputs: [Parameter.Generic({ name: 'n', type: 'integer' })] }, () => {});
  assert.equal(e.param, 'tag');
  assert.throws(() => client.predictors.register(add), (err) => err instanceof PredictorDefinitionError && /already registered/.test(err.message));
  assert.throws(() => client.predictors.register(() => 0), TypeError);
});

test('the example runs', () => {
  const { execFileSync } = require('node:child_process');
  const fs = require('node:fs');
  const os = require('node:os');
  const path = require('node:path');
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ingle-example-'));
  fs.mkdirSync(path.join(dir, 'node_modules'));
  fs.symlinkSync(path.resolve(__dirname, '..'), path.join(dir, 'node_modules', 'ingle'));
  const example = path.resolve(__dirname, '..', '..', 'examples', 'node', 'predictor.js');
  fs.copyFileSync(example, path.join(dir, 'predictor.js'));
  const out = execFileSync(process.execPath, ['predictor.js'], { cwd: dir, encoding: 'utf8', timeout: 120000 }).trim().split('\n');
  assert.equal(out.at(-1), `tone.wav: ${44 + 3 * 2 * 4800} bytes`);
  assert.ok(out[0].length > 5, out[0]);
  fs.rmSync(dir, { recursive: true, force: true });
});
