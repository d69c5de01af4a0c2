'use strict';
// client.audio.transcriptions.create (and translations) on the default Whisper model
// (@local/whisper-tiny-en, int8) and real recordings fetched by scripts/fetch-models; the
// multilingual @local/whisper-base on espeak-ng clips in French, German and Spanish
// (tests/data/speech, made by scripts/make-speech-clips): detection and translation.
const test = require('node:test');
const assert = require('node:assert/strict');
const fs = require('fs');
const os = require('os');
const path = require('path');
const { Readable } = require('stream');
const { toFile } = require('openai');
const { OpenAI, Stream, BadRequestError, NotFoundError, OpenAIError, APIUserAbortError } = require('..');

const model = '@local/whisper-tiny-en';
const voice = '@local/piper-en-us-joe-medium';
const modelsDir = process.env.INGLE_MODELS_DIR ||
  path.join(process.env.XDG_CACHE_HOME || path.join(os.homedir(), '.cache'), 'ingle', 'models');
const recording = (name) => path.join(modelsDir, 'recordings', name);
const BECKETT = recording('beckett.wav'); // 16 kHz mono, 9.96 s
const TWO_CITIES = recording('two_cities.wav'); // 48 kHz, 44.4 s: two 30 s windows
const beckettWords = 'ever tried ever failed no matter try again fail again fail better';
const multilingual = '@local/whisper-base';
// French: "Bonjour. Je m'appelle Marie et j'habite à Paris. Le matin, je bois un café avec du
// lait. Le soir, je mange du pain et du fromage." (11.17 s)
const clip = (code) => path.join(__dirname, '..', '..', 'tests', 'data', 'speech', `${code}.flac`);
// A translation of the French clip: "coffee" (espeak says "café" clearly), English around it,
// no French left. faster-whisper int8 on the same weights: "Hello. I called Mary and I am going
// to Paris. Again, I see a coffee with bread. ..."; ingle int8: "Hello. I called Marie and I am
// here. Again, I see a coffee with Bure. ..." (espeak's French is hard: only some words carry).
const englishWords = ['i', 'and', 'with', 'the', 'a', 'to'];
const frenchWords = ['je', 'et', 'avec', 'du', 'le', 'bonjour'];
const translatedFromFrench = (words) => words.includes('coffee')
  && englishWords.filter((w) => words.includes(w)).length >= 2
  && !frenchWords.some((w) => words.includes(w));
const client = new OpenAI();

/** Lower case, no punctuation, single spaces: "No matter. Try again." = "No matter, try again." */
const normalise = (text) => text.toLowerCase().replace(/[^a-z0-9' ]+/g, ' ').split(/\s+/).filter(Boolean).join(' ');
// Word-level edit distance between two texts, normalised.
const wordErrors = (a, b) => {
  const [x, y] = [normalise(a).split(' '), normalise(b).split(' ')];
  let row = Array.from({ length: y.length + 1 }, (_, j) => j);
  x.forEach((word, i) => {
    const next = [i + 1];
    y.forEach((other, j) => next.push(Math.min(row[j] + (word !== other ? 1 : 0), next[j] + 1, row[j + 1] + 1)));
    row = next;
  });
  return row[y.length];
};

async function waitIdle() {
  const deadline = Date.now() + 10000;
  for (;;) {
    const m = await client.metrics(model);
    if (m.active_requests === 0 && m.queued_requests === 0) return m;
    if (Date.now() > deadline) throw new Error(`still busy: ${JSON.stringify(m)}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

/** The int16 PCM of a WAV file, decoded by hand: { samples (interleaved, -1 to 1), rate, channels }. */
function decodeWav(bytes) {
  assert.equal(bytes.toString('latin1', 0, 4), 'RIFF');
  assert.equal(bytes.toString('latin1', 8, 12), 'WAVE');
  let format;
  for (let at = 12; at + 8 <= bytes.length;) {
    const id = bytes.toString('latin1', at, at + 4);
    const size = bytes.readUInt32LE(at + 4);
    if (id === 'fmt ') {
      format = {
        tag: bytes.readUInt16LE(at + 8),
        channels: bytes.readUInt16LE(at + 10),
        rate: bytes.readUInt32LE(at + 12),
        bits: bytes.readUInt16LE(at + 22),
      };
    } else if (id === 'data') {
      assert.ok(format && format.tag === 1 && format.bits === 16, `not int16 PCM: ${JSON.stringify(format)}`);
      const count = Math.min(size, bytes.length - at - 8) >> 1;
      const samples = new Float32Array(count);
      for (let i = 0; i < count; i++) samples[i] = bytes.readInt16LE(at + 8 + 2 * i) / 32768;
      return { samples, rate: format.rate, channels: format.channels };
    }
    at += 8 + size + (size & 1);
  }
  throw new Error('no data chunk');
}

test('file as a stream, Buffer, Uint8Array, ArrayBuffer, Blob, File, toFile, Response or raw samples', async (t) => {
  const bytes = fs.readFileSync(BECKETT);
  const start = Date.now();
  const first = await client.audio.transcriptions.create({ model, file: fs.createReadStream(BECKETT) });
  const firstMs = Date.now() - start;
  assert.deepEqual(Object.keys(first).sort(), ['text', 'usage']);
  assert.equal(normalise(first.text), beckettWords, first.text);
  assert.equal(first.text, first.text.trim());
  assert.equal(first.usage.type, 'duration');
  assert.ok(Math.abs(first.usage.seconds - 9.963) < 0.01, `${first.usage.seconds} s`);

  const { samples, rate, channels } = decodeWav(bytes);
  assert.deepEqual([rate, channels], [16000, 1]);
  const stereo = new Float32Array(samples.length * 2);
  samples.forEach((x, i) => { stereo[2 * i] = x; stereo[2 * i + 1] = x; });
  const files = {
    'a Buffer': bytes,
    'a Uint8Array': new Uint8Array(bytes),
    'an ArrayBuffer': bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength),
    'a Blob': new Blob([bytes]),
    'a File': new File([bytes], 'beckett.wav', { type: 'audio/wav' }),
    'toFile(Buffer)': await toFile(bytes, 'beckett.wav'),
    'toFile(fs stream)': await toFile(fs.createReadStream(BECKETT)),
    'a web ReadableStream': Readable.toWeb(fs.createReadStream(BECKETT)),
    'an async generator': (async function* chunks() {
      for (let i = 0; i < bytes.length; i += 1000) yield bytes.subarray(i, i + 1000);
    })(),
    'a fetch Response': new Response(bytes),
    'raw samples': { samples, sample_rate: 16000 },
    'raw stereo samples': { samples: stereo, sample_rate: 16000, channels: 2 },
  };
  const times = {};
  for (const [label, file] of Object.entries(files)) {
    const startFile = Date.now();
    const r = await client.audio.transcriptions.create({ model, file });
    times[label] = Date.now() - startFile;
    if (label.startsWith('raw')) {
      assert.equal(normalise(r.text), beckettWords, `${label}: ${r.text}`);
      assert.ok(Math.abs(r.usage.seconds - 9.963) < 0.01, `${label}: ${r.usage.seconds} s`);
    } else {
      assert.deepEqual(r, first, label); // the same bytes, the same answer
    }
  }
  // Raw samples at another rate are resampled: two_cities (48 kHz) as samples and as the file.
  const cities = decodeWav(fs.readFileSync(TWO_CITIES));
  assert.equal(cities.rate, 48000);
  const [fromSamples, fromFile] = await Promise.all([
    client.audio.transcriptions.create({ model, file: { samples: cities.samples, sample_rate: cities.rate, channels: cities.channels } }),
    client.audio.transcriptions.create({ model, file: fs.createReadStream(TWO_CITIES) }),
  ]);
  assert.match(normalise(fromFile.text), /^it was the best of times it was the worst of times/);
  assert.equal(normalise(fromSamples.text), normalise(fromFile.text));
  t.diagnostic(`first (with model load) ${firstMs} ms; ${JSON.stringify(times)}`);
});

test('the work runs off the event loop', async () => {
  await waitIdle();
  let ticks = 0;
  const timer = setInterval(() => { ticks++; }, 5);
  const t = Date.now();
  const r = await client.audio.transcriptions.create({ model, file: fs.readFileSync(TWO_CITIES) });
  const ms = Date.now() - t;
  clearInterval(timer);
  assert.match(normalise(r.text), /comparison only$/);
  // A blocked event loop would fire the timer once at most.
  assert.ok(ticks >= Math.min(10, ms / 20), `${ticks} ticks in ${ms} ms`);
});

/** SubRip or WebVTT cues: [{ index, start, end, text }], checked strictly. */
function parseCues(body, vtt) {
  let rest = body;
  if (vtt) {
    assert.ok(body.startsWith('WEBVTT\n\n'), JSON.stringify(body.slice(0, 20)));
    rest = body.slice('WEBVTT\n\n'.length);
  }
  assert.ok(rest.endsWith('\n\n'), JSON.stringify(body.slice(-10)));
  const sep = vtt ? '\\.' : ',';
  const time = new RegExp(`^(\\d{2}):(\\d{2}):(\\d{2})${sep}(\\d{3}) --> (\\d{2}):(\\d{2}):(\\d{2})${sep}(\\d{3})$`);
  const seconds = (h, m, s, ms) => Number(h) * 3600 + Number(m) * 60 + Number(s) + Number(ms) / 1000;
  return rest.slice(0, -2).split('\n\n').map((block, i) => {
    const lines = block.split('\n');
    if (!vtt) assert.equal(lines.shift(), String(i + 1), `cue ${i + 1} number: ${block}`);
    const match = time.exec(lines.shift());
    assert.ok(match, `cue ${i + 1} times: ${block}`);
    assert.ok(Number(match[2]) < 60 && Number(match[3]) < 60 && Number(match[6]) < 60 && Number(match[7]) < 60, block);
    assert.equal(lines.length, 1, `cue ${i + 1}: one line of text: ${block}`);
    assert.ok(lines[0].length > 0 && lines[0] === lines[0].trim(), block);
    return { start: seconds(...match.slice(1, 5)), end: seconds(...match.slice(5, 9)), text: lines[0] };
  });
}

function checkTimes(items, duration, label) {
  let previous = 0;
  for (const item of items) {
    assert.ok(item.start >= previous - 1e-9, `${label}: starts before the previous end: ${JSON.stringify(item)}`);
    assert.ok(item.end >= item.start, `${label}: ${JSON.stringify(item)}`);
    previous = item.end;
  }
  assert.ok(previous > duration * 0.5 && previous <= duration + 0.5, `${label}: ends at ${previous} of ${duration} s`);
}

test('every response_format: json, text, srt, vtt, verbose_json (segments and words)', async () => {
  const file = () => fs.createReadStream(BECKETT);
  const json = await client.audio.transcriptions.create({ model, file: file(), response_format: 'json' });
  assert.equal(normalise(json.text), beckettWords);

  const text = await client.audio.transcriptions.create({ model, file: file(), response_format: 'text' });
  assert.equal(typeof text, 'string');
  assert.equal(text, `${json.text}\n`);

  const srt = await client.audio.transcriptions.create({ model, file: file(), response_format: 'srt' });
  assert.equal(typeof srt, 'string');
  const srtCues = parseCues(srt, false);
  assert.ok(srtCues.length >= 2, srt);
  checkTimes(srtCues, 9.963, 'srt');
  assert.equal(normalise(srtCues.map((c) => c.text).join(' ')), beckettWords);
  assert.equal(srtCues[0].start, 0);

  const vtt = await client.audio.transcriptions.create({ model, file: file(), response_format: 'vtt' });
  assert.equal(typeof vtt, 'string');
  assert.ok(!/\d,\d{3} -->/.test(vtt), vtt);
  const vttCues = parseCues(vtt, true);
  assert.deepEqual(vttCues, srtCues); // the same cues, in the other notation

  const verbose = await client.audio.transcriptions.create({ model, file: file(), response_format: 'verbose_json' });
  assert.deepEqual(Object.keys(verbose).sort(), ['duration', 'language', 'segments', 'task', 'text', 'usage']);
  assert.equal(verbose.task, 'transcribe');
  assert.equal(verbose.language, 'english');
  assert.ok(Math.abs(verbose.duration - 9.963) < 0.01);
  assert.equal(verbose.text, json.text);
  assert.deepEqual(verbose.usage, json.usage);
  const segmentKeys = ['avg_logprob', 'compression_ratio', 'end', 'id', 'no_speech_prob', 'seek', 'start', 'temperature', 'text', 'tokens'];
  verbose.segments.forEach((s, i) => {
    assert.deepEqual(Object.keys(s).sort(), segmentKeys);
    assert.equal(s.id, i);
    assert.ok(s.tokens.length > 0 && s.tokens.every(Number.isInteger));
    for (const k of ['avg_logprob', 'compression_ratio', 'no_speech_prob', 'temperature', 'seek']) assert.equal(typeof s[k], 'number');
  });
  assert.equal(verbose.segments.map((s) => s.text).join('').trim(), verbose.text);
  // The cues are the segments.
  assert.deepEqual(srtCues.map((c) => [c.start, c.end, c.text]), verbose.segments.map((s) => [s.start, s.end, s.text.trim()]));
  checkTimes(verbose.segments, verbose.duration, 'segments');

  const words = await client.audio.transcriptions.create({
    model, file: file(), response_format: 'verbose_json', timestamp_granularities: ['word'],
  });
  assert.deepEqual(Object.keys(words).sort(), ['duration', 'language', 'task', 'text', 'usage', 'words']);
  assert.equal(words.words.length, beckettWords.split(' ').length, JSON.stringify(words.words));
  for (const w of words.words) assert.deepEqual(Object.keys(w).sort(), ['end', 'start', 'word']);
  assert.equal(normalise(words.words.map((w) => w.word).join(' ')), beckettWords);
  checkTimes(words.words, words.duration, 'words');
  // "failed." ends before "No" starts: a pause of about a second in the recording.
  const failed = words.words[3];
  assert.equal(normalise(failed.word), 'failed');
  assert.ok(words.words[4].start - failed.end > 0.4, JSON.stringify(words.words.slice(3, 5)));

  const both = await client.audio.transcriptions.create({
    model, file: file(), response_format: 'verbose_json', timestamp_granularities: ['segment', 'word'],
  });
  assert.ok(both.segments.length >= 2 && both.words.length === words.words.length);
  assert.deepEqual(both.words, words.words);
});

test('stream: deltas concatenate to the text of create, then done with usage', async (t) => {
  const whole = await client.audio.transcriptions.create({ model, file: fs.createReadStream(TWO_CITIES) });
  const start = Date.now();
  const stream = await client.audio.transcriptions.create({ model, file: fs.createReadStream(TWO_CITIES), stream: true });
  assert.ok(stream instanceof Stream);
  assert.ok(stream.controller instanceof AbortController);
  const events = [];
  const times = [];
  for await (const event of stream) {
    events.push(event);
    times.push(Date.now() - start);
  }
  const done = events.pop();
  assert.ok(events.length >= 3, `${events.length} deltas`);
  for (const e of events) {
    assert.deepEqual(Object.keys(e).sort(), ['delta', 'type']);
    assert.equal(e.type, 'transcript.text.delta');
    assert.ok(e.delta.length > 0);
  }
  assert.deepEqual(Object.keys(done).sort(), ['text', 'type', 'usage']);
  assert.equal(done.type, 'transcript.text.done');
  assert.equal(events.map((e) => e.delta).join(''), done.text);
  assert.equal(done.text, whole.text);
  assert.deepEqual(done.usage, whole.usage);
  assert.ok(Math.abs(done.usage.seconds - 44.374) < 0.01, `${done.usage.seconds} s`);
  // The first 30 s window's text comes before the second window is decoded.
  assert.ok(times[0] < times.at(-1) * 0.9, `first delta at ${times[0]} ms, done at ${times.at(-1)} ms`);
  await assert.rejects(async () => {
    for await (const e of stream) void e;
  }, /consumed/);

  // response_format text streams the same events.
  const textEvents = [];
  for await (const e of await client.audio.transcriptions.create({ model, file: fs.readFileSync(BECKETT), response_format: 'text', stream: true })) {
    textEvents.push(e);
  }
  assert.equal(textEvents.at(-1).type, 'transcript.text.done');
  assert.equal(normalise(textEvents.at(-1).text), beckettWords);
  t.diagnostic(`two_cities: ${events.length} deltas, first at ${times[0]} ms, done at ${times.at(-1)} ms`);
});

test('aborting a stream while its window decodes stops the decoder there', async (t) => {
  // The abort cancels the call, which Whisper's decoder asks before each token: the pending
  // next() ends without waiting for the 30 s window it was decoding to end.
  const open = () => client.audio.transcriptions.create(
    { model, file: fs.readFileSync(TWO_CITIES), stream: true },
    { signal: controller.signal },
  );
  // How long the first window takes, whole.
  let controller = new AbortController();
  let started = Date.now();
  const whole = (await (await open())[Symbol.asyncIterator]().next()).value;
  const windowMs = Date.now() - started;
  assert.equal(whole.type, 'transcript.text.delta');
  controller.abort();
  const before = await waitIdle();
  controller = new AbortController();
  const stream = await open();
  let abortedAt = 0;
  setTimeout(() => { abortedAt = Date.now(); controller.abort(); }, Math.min(50, windowMs / 4));
  await assert.rejects(async () => {
    for await (const event of stream) void event;
  }, APIUserAbortError);
  const stoppedMs = Date.now() - abortedAt;
  const after = await waitIdle();
  assert.equal(after.cancelled_requests, before.cancelled_requests + 1);
  assert.ok(stoppedMs < windowMs / 2, `stopped ${stoppedMs} ms after the abort; a window takes ${windowMs} ms`);
  t.diagnostic?.(`window ${windowMs} ms, stopped ${stoppedMs} ms after the abort`);
});

test('aborting the signal stops the work; the client works afterwards', async () => {
  // A whole two_cities run decodes two windows.
  let before = await waitIdle();
  await client.audio.transcriptions.create({ model, file: fs.readFileSync(TWO_CITIES) });
  let after = await waitIdle();
  assert.equal(after.generated_tokens - before.generated_tokens, 2);

  // Streamed: abort after the first delta; the iteration throws APIUserAbortError and the
  // second window is never decoded.
  before = after;
  const controller = new AbortController();
  const stream = await client.audio.transcriptions.create(
    { model, file: fs.createReadStream(TWO_CITIES), stream: true },
    { signal: controller.signal },
  );
  const deltas = [];
  await assert.rejects(async () => {
    for await (const event of stream) {
      deltas.push(event);
      if (deltas.length === 1) controller.abort();
    }
  }, APIUserAbortError);
  assert.equal(deltas.length, 1);
  assert.equal(deltas[0].type, 'transcript.text.delta');
  after = await waitIdle();
  assert.equal(after.cancelled_requests, before.cancelled_requests + 1);
  assert.equal(after.generated_tokens - before.generated_tokens, 1, 'the second window was decoded');

  // Not streamed: rejects as soon as the signal aborts, and stops before the next segment.
  before = after;
  const whole = new AbortController();
  const t = Date.now();
  const pending = client.audio.transcriptions.create({ model, file: fs.readFileSync(TWO_CITIES) }, { signal: whole.signal });
  setTimeout(() => whole.abort(), 100);
  await assert.rejects(pending, APIUserAbortError);
  const ms = Date.now() - t;
  after = await waitIdle();
  assert.equal(after.cancelled_requests, before.cancelled_requests + 1);
  assert.ok(after.generated_tokens - before.generated_tokens < 2, 'both windows were decoded');
  assert.ok(ms < 400, `rejected after ${ms} ms`);

  // Stopping the stream with break or stream.controller.abort() stops the work too.
  before = after;
  for await (const event of await client.audio.transcriptions.create({ model, file: fs.readFileSync(TWO_CITIES), stream: true })) {
    void event;
    break;
  }
  const controlled = await client.audio.transcriptions.create({ model, file: fs.readFileSync(TWO_CITIES), stream: true });
  await assert.rejects(async () => {
    for await (const event of controlled) {
      void event;
      controlled.controller.abort();
    }
  }, APIUserAbortError);
  after = await waitIdle();
  assert.equal(after.cancelled_requests, before.cancelled_requests + 2);
  assert.equal(after.generated_tokens - before.generated_tokens, 2);

  // An aborted signal rejects at once and starts nothing, streamed or not.
  before = after;
  for (const stream of [false, true]) {
    await assert.rejects(
      client.audio.transcriptions.create({ model, file: fs.createReadStream(TWO_CITIES), stream }, { signal: controller.signal }),
      APIUserAbortError,
    );
  }
  assert.deepEqual(await waitIdle(), before);

  const r = await client.audio.transcriptions.create({ model, file: fs.createReadStream(BECKETT) });
  assert.equal(normalise(r.text), beckettWords);
});

test('speech to text round trip: audio.speech output transcribes back', async () => {
  const sentence = 'The quick brown fox jumps over the lazy dog.';
  const speech = await client.audio.speech.create({ model: voice, voice: 'alloy', input: sentence, response_format: 'wav' });
  const wav = Buffer.from(await speech.arrayBuffer());
  const r = await client.audio.transcriptions.create({ model, file: await toFile(wav, 'fox.wav') });
  // The voice samples its durations, so each synthesis differs a little and Whisper tiny can
  // mishear one word of it ("quit brown fox"); more than one is a failure.
  assert.ok(wordErrors(r.text, sentence) <= 1, r.text);
  assert.ok(r.usage.seconds > 1.5 && r.usage.seconds < 5, `${r.usage.seconds} s`);
  // The speech Response itself as the file (mp3), as openai takes a fetch Response.
  const mp3 = await client.audio.speech.create({ model: voice, voice: 'joe', input: sentence });
  const fromMp3 = await client.audio.transcriptions.create({ model, file: mp3, response_format: 'text' });
  assert.ok(wordErrors(fromMp3, sentence) <= 1, fromMp3);
});

test('translations on the English-only model reject naming the model; a bad file first', async () => {
  const translations = client.audio.translations;
  for (const response_format of [undefined, 'text', 'verbose_json']) {
    await assert.rejects(translations.create({ model, file: fs.createReadStream(BECKETT), response_format }), (e) => {
      assert.ok(e instanceof BadRequestError, e && e.stack);
      assert.equal(e.status, 400);
      assert.equal(e.param, 'model');
      assert.match(e.message, /English-only/);
      assert.match(e.message, /cannot translate/);
      assert.ok(e.message.includes(multilingual), e.message); // what to use instead
      return true;
    });
  }
  // A model with no transcription predictor cannot translate either.
  await assert.rejects(translations.create({ model: '@local/all-minilm-l6-v2', file: fs.readFileSync(BECKETT) }),
    (e) => e instanceof BadRequestError && e.param === 'model' && /cannot serve audio\.translations/.test(e.message));
  await assert.rejects(translations.create({ model }), (e) => e instanceof BadRequestError && e.param === 'file');
  await assert.rejects(translations.create({ model: '@nobody/nothing', file: Buffer.alloc(4) }), NotFoundError);
  const r = await client.audio.transcriptions.create({ model, file: fs.createReadStream(BECKETT) });
  assert.equal(normalise(r.text), beckettWords);
});

test('whisper-base detects the language of each clip and reports it in verbose_json', async () => {
  for (const [file, language, words] of [
    [clip('fr'), 'french', ['bonjour', 'paris']],
    [clip('de'), 'german', ['guten tag', 'deutschland']],
    [clip('es'), 'spanish', ['buenos', 'españa']],
    [BECKETT, 'english', ['fail better']],
  ]) {
    const r = await client.audio.transcriptions.create({ model: multilingual, file: fs.createReadStream(file), response_format: 'verbose_json' });
    assert.equal(r.task, 'transcribe');
    assert.equal(r.language, language, `${path.basename(file)}: ${r.text}`);
    // In the language heard, not translated.
    for (const word of words) assert.ok(r.text.toLowerCase().includes(word), `${path.basename(file)}: ${word} not in ${r.text}`);
    assert.ok(r.segments.length >= 1 && r.usage.type === 'duration');
  }
  // Languages Whisper does not know, and French on the English-only model, name `language`
  // (before any decoding), on both methods.
  for (const [m, language, message] of [[multilingual, 'klingon', /not a language Whisper knows/], [model, 'fr', /English-only/]]) {
    for (const method of [client.audio.transcriptions, client.audio.translations]) {
      await assert.rejects(method.create({ model: m, file: fs.readFileSync(clip('fr')), language }), (e) => {
        assert.ok(e instanceof BadRequestError, e && e.stack);
        assert.equal(e.param, 'language');
        assert.match(e.message, message);
        return true;
      });
    }
  }
});

test('whisper-base translates French into English: json, verbose_json', async () => {
  const translations = client.audio.translations;
  const json = await translations.create({ model: multilingual, file: fs.createReadStream(clip('fr')) });
  assert.deepEqual(Object.keys(json), ['text']); // openai's Translation: the text alone
  const lower = json.text.toLowerCase();
  assert.ok(translatedFromFrench(normalise(json.text).split(' ')), json.text);
  assert.ok(!lower.includes('bonjour'), json.text);
  const verbose = await translations.create({ model: multilingual, file: fs.readFileSync(clip('fr')), response_format: 'verbose_json' });
  assert.deepEqual(Object.keys(verbose).sort(), ['duration', 'language', 'segments', 'task', 'text']);
  assert.equal(verbose.task, 'translate');
  assert.equal(verbose.language, 'english'); // the output's
  assert.equal(verbose.text, json.text);
  assert.ok(Math.abs(verbose.duration - 11.167) < 0.01, `${verbose.duration} s`);
  assert.equal(verbose.segments.map((s) => s.text).join('').trim(), verbose.text);
  // It does not stream.
  await assert.rejects(translations.create({ model: multilingual, file: fs.readFileSync(clip('fr')), stream: true }),
    (e) => e instanceof BadRequestError && e.param === 'stream');
});

test('bad requests reject before any work, naming the field; the client works afterwards', async () => {
  const wav = fs.readFileSync(BECKETT);
  const before = await waitIdle();
  const cases = [
    [{ file: undefined }, 'file', /Missing required parameter/],
    [{ file: null }, 'file'],
    [{ file: 'beckett.wav' }, 'file', /createReadStream/],
    [{ file: 42 }, 'file'],
    [{ file: {} }, 'file'],
    [{ file: [1, 2] }, 'file'],
    [{ file: toFile(wav, 'a.wav') }, 'file', /Promise/],
    [{ file: Buffer.from('not audio at all') }, 'file', /Supported formats: .*wav/],
    [{ file: Buffer.alloc(0) }, 'file', /empty/],
    [{ file: new Blob([]) }, 'file'],
    [{ file: wav.subarray(0, 44) }, 'file', /no audio/],
    // (a getter: the stream is made when the request is, as its open error comes at once)
    [{ get file() { return fs.createReadStream(recording('no-such-file.wav')); } }, 'file', /ENOENT/],
    [{ file: (async function* numbers() { yield 1; })() }, 'file', /chunk 0/],
    [{ file: new Response('gone', { status: 404 }) }, 'file', /404/],
    [{ file: { samples: [0, 0.1], sample_rate: 16000 } }, 'file.samples'],
    [{ file: { samples: new Float64Array(16000), sample_rate: 16000 } }, 'file.samples', /Float64Array/],
    [{ file: { samples: new Float32Array(0), sample_rate: 16000 } }, 'file', /nothing to transcribe/],
    [{ file: { samples: Float32Array.of(0, NaN, 0), sample_rate: 16000 } }, 'file', /finite/],
    [{ file: { samples: new Float32Array(16000) } }, 'file.sample_rate'],
    [{ file: { samples: new Float32Array(16000), sample_rate: 16 } }, 'file.sample_rate'],
    [{ file: { samples: new Float32Array(16000), sample_rate: 16000.5 } }, 'file.sample_rate'],
    [{ file: { samples: new Float32Array(16000), sample_rate: '16000' } }, 'file.sample_rate'],
    [{ file: { samples: new Float32Array(16000), sample_rate: 16000, channels: 0 } }, 'file.channels'],
    [{ file: { samples: new Float32Array(16001), sample_rate: 16000, channels: 2 } }, 'file.samples', /frames/],
    [{ file: { samples: new Float32Array(16000), sample_rate: 16000, rate: 8000 } }, 'file.rate'],
    [{ model: undefined }, 'model'],
    [{ model: '' }, 'model'],
    [{ model: 42 }, 'model'],
    [{ model: '@local/all-minilm-l6-v2' }, 'model', /cannot serve audio\.transcriptions/],
    [{ language: 'fr' }, 'language', /English-only/],
    [{ language: 42 }, 'language'],
    [{ prompt: ['a'] }, 'prompt'],
    [{ response_format: 'docx' }, 'response_format'],
    [{ response_format: 'diarized_json' }, 'response_format'],
    [{ temperature: 2 }, 'temperature'],
    [{ temperature: NaN }, 'temperature', /finite/],
    [{ temperature: 'hot' }, 'temperature'],
    [{ timestamp_granularities: ['sentence'] }, 'timestamp_granularities'],
    [{ timestamp_granularities: 'word', response_format: 'verbose_json' }, 'timestamp_granularities'],
    [{ timestamp_granularities: ['word'] }, 'timestamp_granularities', /verbose_json/],
    [{ include: ['logprobs'] }, 'include'],
    [{ chunking_strategy: 'auto' }, 'chunking_strategy'],
    [{ known_speaker_names: ['A'] }, 'known_speaker_names'],
    [{ stream: 'yes' }, 'stream'],
    [{ stream: true, response_format: 'srt' }, 'stream'],
    [{ stream: true, response_format: 'verbose_json' }, 'stream'],
    [{ stream: true, language: 'de' }, 'language'],
  ];
  for (const [params, param, message] of cases) {
    const label = `${Object.keys(params).join(', ')}: ${param}`;
    const t = Date.now();
    await assert.rejects(client.audio.transcriptions.create({ model, file: wav, ...params }), (e) => {
      assert.ok(e instanceof BadRequestError, `${label}: ${e && e.stack}`);
      assert.equal(e.status, 400, label);
      assert.equal(e.param, param, `${label}: ${e.message}`);
      assert.equal(e.error.param, param, label);
      assert.equal(e.error.type, 'invalid_request_error', label);
      if (message) assert.match(e.message, message, label);
      return true;
    });
    assert.ok(Date.now() - t < 3000, `${label}: took ${Date.now() - t} ms`);
  }
  await assert.rejects(client.audio.transcriptions.create({ model: '@nobody/nothing', file: wav }), (e) => {
    assert.ok(e instanceof NotFoundError);
    assert.equal(e.code, 'model_not_found');
    return true;
  });
  await assert.rejects(client.audio.transcriptions.create(null), (e) => e instanceof BadRequestError && e.param === null);
  await assert.rejects(client.audio.transcriptions.create({ model, file: wav }, { signal: 'stop' }),
    (e) => e instanceof OpenAIError && !(e instanceof BadRequestError) && /options\.signal/.test(e.message));
  const after = await waitIdle();
  assert.equal(after.generated_tokens, before.generated_tokens, 'a transcription started');
  assert.equal(after.cancelled_requests, before.cancelled_requests);
  // The client goes on working.
  const r = await client.audio.transcriptions.create({ model, file: wav, response_format: 'verbose_json' });
  assert.equal(normalise(r.text), beckettWords);
});
