'use strict';
// client.audio.speech.create on the default voice (Piper en_US joe, ONNX Runtime + espeak-ng).
const test = require('node:test');
const assert = require('node:assert/strict');
const { OpenAI, BadRequestError, NotFoundError, OpenAIError, APIUserAbortError } = require('..');

const model = '@local/piper-en-us-joe-medium';
const paragraph = 'The morning was quiet. A small boat drifted on the lake. ' +
  'Birds sang in the tall trees by the shore. The fisherman waited for a bite. ' +
  'At noon he rowed home with an empty basket.';
const client = new OpenAI();

async function waitIdle(c = client) {
  const deadline = Date.now() + 10000;
  for (;;) {
    const m = await c.metrics(model);
    if (m.active_requests === 0 && m.queued_requests === 0) return m;
    if (Date.now() > deadline) throw new Error(`still busy: ${JSON.stringify(m)}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

async function bytesOf(params) {
  const response = await client.audio.speech.create({ model, voice: 'alloy', ...params });
  return { response, bytes: new Uint8Array(await response.arrayBuffer()) };
}

const ascii = (bytes, start, end) => Buffer.from(bytes.subarray(start, end)).toString('latin1');

test('every response_format: content-type and magic bytes', async () => {
  const input = 'Hello there. How are you?';
  const magic = {
    mp3: ['audio/mpeg', (b) => ascii(b, 0, 3) === 'ID3' || (b[0] === 0xff && (b[1] & 0xe0) === 0xe0)],
    opus: ['audio/ogg', (b) => ascii(b, 0, 4) === 'OggS' && ascii(b, 28, 36) === 'OpusHead'],
    aac: ['audio/aac', (b) => b[0] === 0xff && (b[1] === 0xf1 || b[1] === 0xf9)],
    flac: ['audio/flac', (b) => ascii(b, 0, 4) === 'fLaC'],
    wav: ['audio/wav', (b) => ascii(b, 0, 4) === 'RIFF' && ascii(b, 8, 16) === 'WAVEfmt '],
    pcm: ['audio/pcm', (b) => b.length % 2 === 0],
  };
  const lengths = {};
  for (const [format, [contentType, check]] of Object.entries(magic)) {
    const { response, bytes } = await bytesOf({ input, response_format: format });
    assert.equal(response.status, 200, format);
    assert.equal(response.ok, true, format);
    assert.equal(response.headers.get('content-type'), contentType, format);
    assert.ok(bytes.length > 1000, `${format}: ${bytes.length} bytes`);
    assert.ok(check(bytes), `${format}: starts with ${Buffer.from(bytes.subarray(0, 16)).toString('hex')}`);
    lengths[format] = bytes.length;
  }
  // pcm is 16-bit mono at 24 kHz: as long as the wav (16-bit at 22.05 kHz), give or take the
  // voice's random timing.
  const seconds = (lengths.wav - 44) / 2 / 22050;
  const expected = seconds * 24000 * 2;
  assert.ok(seconds > 0.8 && seconds < 5, `${seconds} s`);
  assert.ok(Math.abs(lengths.pcm - expected) < expected * 0.3, `pcm ${lengths.pcm} bytes, ~${expected} expected`);

  // The default format is mp3; OpenAI voice names and the model's own voice both speak.
  const { response } = await bytesOf({ input: 'Hi.', voice: 'joe' });
  assert.equal(response.headers.get('content-type'), 'audio/mpeg');
});

test('the body streams sentence by sentence, the first well before the last', async () => {
  await bytesOf({ input: 'Warm up.' }); // the model is loaded
  const start = Date.now();
  const response = await client.audio.speech.create({ model, input: paragraph, voice: 'nova', response_format: 'pcm' });
  const times = [];
  let total = 0;
  for await (const chunk of response.body) {
    assert.ok(chunk instanceof Uint8Array && chunk.length > 0);
    times.push(Date.now() - start);
    total += chunk.length;
  }
  assert.ok(times.length >= 4, `${times.length} chunks`);
  const [first, last] = [times[0], times.at(-1)];
  assert.ok(first < last * 0.6, `first chunk at ${first} ms, last at ${last} ms`);
  assert.ok(total % 2 === 0 && total > 5 * 24000, `${total} bytes`);
  assert.equal((await waitIdle()).active_requests, 0);
});

test('stream_format sse: delta events, then done with usage', async () => {
  const response = await client.audio.speech.create({
    model, input: 'One. Two.', voice: 'joe', response_format: 'pcm', stream_format: 'sse',
  });
  assert.equal(response.headers.get('content-type'), 'text/event-stream');
  const events = (await response.text()).trim().split('\n\n').map((e) => {
    assert.ok(e.startsWith('data: '), e.slice(0, 40));
    return JSON.parse(e.slice(6));
  });
  const deltas = events.slice(0, -1);
  assert.ok(deltas.length >= 1 && deltas.every((e) => e.type === 'speech.audio.delta'));
  const audio = Buffer.concat(deltas.map((e) => Buffer.from(e.audio, 'base64')));
  assert.ok(audio.length > 24000 && audio.length % 2 === 0, `${audio.length} bytes`);
  const done = events.at(-1);
  assert.equal(done.type, 'speech.audio.done');
  assert.ok(done.usage.input_tokens > 0 && done.usage.total_tokens === done.usage.input_tokens + done.usage.output_tokens);
});

test('aborting the signal stops synthesis', async () => {
  const before = (await waitIdle()).cancelled_requests;
  const controller = new AbortController();
  const response = await client.audio.speech.create(
    { model, input: paragraph, voice: 'joe', response_format: 'wav' },
    { signal: controller.signal },
  );
  const reader = response.body.getReader();
  const first = await reader.read();
  assert.equal(ascii(first.value, 0, 4), 'RIFF');
  controller.abort();
  await assert.rejects(reader.read(), APIUserAbortError);
  assert.equal((await waitIdle()).cancelled_requests, before + 1);

  // An already-aborted signal rejects at once, and starts nothing.
  await assert.rejects(
    client.audio.speech.create({ model, input: paragraph, voice: 'joe' }, { signal: controller.signal }),
    APIUserAbortError,
  );
  // Aborted while the first sentence is synthesised: rejects, and the stream is closed.
  const early = new AbortController();
  const pending = client.audio.speech.create({ model, input: paragraph, voice: 'joe' }, { signal: early.signal });
  setTimeout(() => early.abort(), 1);
  await assert.rejects(pending, APIUserAbortError);
  // The promise rejects at the abort; the native start it leaves may still be queued on the
  // libuv pool (a loaded machine), and is counted when it starts and is closed.
  const deadline = Date.now() + 10000;
  let cancelled = (await waitIdle()).cancelled_requests;
  while (cancelled < before + 2 && Date.now() < deadline) {
    await new Promise((r) => setTimeout(r, 20));
    cancelled = (await waitIdle()).cancelled_requests;
  }
  assert.equal(cancelled, before + 2);
});

test('cancelling the body stops synthesis', async () => {
  const before = (await waitIdle()).cancelled_requests;
  const response = await client.audio.speech.create({ model, input: paragraph, voice: 'joe', response_format: 'mp3' });
  const reader = response.body.getReader();
  await reader.read();
  await reader.cancel();
  assert.equal((await waitIdle()).cancelled_requests, before + 1);
  // Reading to the end cancels nothing.
  await bytesOf({ input: 'The end.' });
  assert.equal((await waitIdle()).cancelled_requests, before + 1);
});

test('bad requests reject before any audio, naming the field', async () => {
  const before = await waitIdle();
  const cases = [
    [{ input: '' }, 'input'],
    [{ input: undefined }, 'input'],
    [{ input: 42 }, 'input'],
    [{ input: 'x'.repeat(4097) }, 'input'],
    [{ voice: 'robot' }, 'voice'],
    [{ voice: undefined }, 'voice'],
    [{ speed: 9 }, 'speed'],
    [{ speed: 0.1 }, 'speed'],
    [{ speed: NaN }, 'speed'],
    [{ speed: 'fast' }, 'speed'],
    [{ response_format: 'ogg' }, 'response_format'],
    [{ stream_format: 'mp4' }, 'stream_format'],
    [{ instructions: 'Whisper.' }, 'instructions'],
    [{ frobnicate: 1 }, 'frobnicate'],
    [{ model: '@local/smollm2-135m-instruct' }, 'model'],
    [{ model: '' }, 'model'],
  ];
  for (const [params, param] of cases) {
    const label = JSON.stringify(params);
    await assert.rejects(
      client.audio.speech.create({ model, input: 'Hi.', voice: 'joe', ...params }),
      (e) => {
        assert.ok(e instanceof BadRequestError, `${label}: ${e && e.stack}`);
        assert.equal(e.status, 400, label);
        assert.equal(e.param, param, label);
        return true;
      },
    );
  }
  await assert.rejects(client.audio.speech.create({ model: '@nobody/nothing', input: 'Hi.', voice: 'joe' }), (e) => {
    assert.ok(e instanceof NotFoundError);
    assert.equal(e.code, 'model_not_found');
    return true;
  });
  await assert.rejects(client.audio.speech.create(null), (e) => e instanceof BadRequestError && e.param === null);
  await assert.rejects(client.audio.speech.create({ model, input: 'Hi.', voice: 'joe' }, { signal: 'stop' }),
    (e) => e instanceof OpenAIError && /options\.signal/.test(e.message));
  const after = await waitIdle();
  assert.equal(after.generated_tokens, before.generated_tokens, 'synthesis started');
  // The client goes on working.
  const { bytes } = await bytesOf({ input: 'Still here.', response_format: 'flac' });
  assert.equal(ascii(bytes, 0, 4), 'fLaC');
});
