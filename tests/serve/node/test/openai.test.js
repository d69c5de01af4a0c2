'use strict';
// `ingle serve` driven by the official `openai` npm package. scripts/test-serve starts the
// server and passes its URL (INGLE_SERVE_URL) and API key (INGLE_SERVE_KEY).
const test = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { OpenAI, toFile } = require('openai');

const client = new OpenAI({ baseURL: process.env.INGLE_SERVE_URL, apiKey: process.env.INGLE_SERVE_KEY, maxRetries: 0 });
const chat = '@local/smollm2-135m-instruct';
const messages = [{ role: 'user', content: 'Name the capital of France.' }];

test('chat, whole and streamed', async () => {
  const whole = await client.chat.completions.create({ model: chat, messages, temperature: 0, max_tokens: 12 });
  assert.match(whole.choices[0].message.content, /Paris/);
  const stream = await client.chat.completions.create({
    model: chat, messages, temperature: 0, max_tokens: 12, stream: true, stream_options: { include_usage: true },
  });
  let text = '';
  let usage;
  for await (const chunk of stream) {
    text += chunk.choices[0]?.delta?.content ?? '';
    usage = chunk.usage ?? usage;
  }
  assert.equal(text, whole.choices[0].message.content);
  assert.equal(usage.total_tokens, whole.usage.total_tokens);
});

test('embeddings', async () => {
  const r = await client.embeddings.create({ model: '@local/all-minilm-l6-v2', input: ['Paris', 'France'] });
  assert.equal(r.data.length, 2);
  assert.equal(r.data[0].embedding.length, 384);
  const norm = Math.sqrt(r.data[0].embedding.reduce((s, x) => s + x * x, 0));
  assert.ok(Math.abs(norm - 1) < 1e-5);
});

test('models and errors', async () => {
  const ids = [];
  for await (const m of client.models.list()) ids.push(m.id);
  const tags = [chat, '@local/qwen2.5-coder-0.5b-instruct', '@local/all-minilm-l6-v2', '@local/piper-en-us-joe-medium', '@local/whisper-tiny-en'];
  // The optional 1.5B (not in `ingle pull --all`) is served once pulled, after the built-ins.
  const modelsDir = process.env.INGLE_MODELS_DIR
    || path.join(process.env.XDG_CACHE_HOME || path.join(os.homedir(), '.cache'), 'ingle', 'models');
  if (fs.existsSync(path.join(modelsDir, 'Qwen2.5-Coder-1.5B-Instruct-Q4_K_M.gguf'))) {
    tags.push('@local/qwen2.5-coder-1.5b-instruct');
  }
  tags.push('@local/whisper-base'); // the multilingual Whisper, a catalog model
  // Each also without its namespace, for frameworks that read `@local/` as a provider.
  assert.deepEqual(ids, [...tags, ...tags.map((t) => t.replace('@local/', ''))]);
  assert.equal((await client.models.retrieve(chat)).id, chat);
  await assert.rejects(client.chat.completions.create({ model: '@no/such', messages }), OpenAI.NotFoundError);
  await assert.rejects(
    client.chat.completions.create({ model: chat, messages, max_tokens: 0 }),
    (err) => err instanceof OpenAI.BadRequestError && err.status === 400,
  );
});

test('audio.speech: bytes with their content type, streamed as they are made', async () => {
  const speech = '@local/piper-en-us-joe-medium';
  const input = 'Hello from the local inference library. It runs open models inside your own process. Nothing is sent over the network.';
  const response = await client.audio.speech.create({ model: speech, voice: 'alloy', input, response_format: 'wav' });
  assert.equal(response.headers.get('content-type'), 'audio/wav');
  const bytes = Buffer.from(await response.arrayBuffer());
  assert.equal(bytes.subarray(0, 4).toString(), 'RIFF');
  assert.equal(bytes.readUInt32LE(24), 22050);
  const streamed = await client.audio.speech.create({ model: speech, voice: 'nova', input, response_format: 'opus' });
  assert.equal(streamed.headers.get('content-type'), 'audio/ogg');
  let chunks = 0;
  let total = 0;
  for await (const chunk of streamed.body) {
    chunks += 1;
    total += chunk.length;
  }
  assert.ok(chunks >= 1 && total > 1000, `${chunks} chunks, ${total} bytes`);
  await assert.rejects(
    client.audio.speech.create({ model: speech, voice: 'alloy', input: 'Hi.', response_format: 'ogg' }),
    (e) => e.status === 400 && e.param === 'response_format',
  );
});

// The recordings scripts/fetch-models puts in the models directory (ingle's default_models_dir).
const modelsDir = process.env.INGLE_MODELS_DIR
  || path.join(process.env.XDG_CACHE_HOME || path.join(os.homedir(), '.cache'), 'ingle', 'models');
const beckett = path.join(modelsDir, 'recordings', 'beckett.wav');
const whisper = '@local/whisper-tiny-en';
// "Ever tried. Ever failed. No matter. Try again. Fail again. Fail better.", normalised.
const beckettWords = 'ever tried ever failed no matter try again fail again fail better';
const words = (text) => text.toLowerCase().replace(/[^a-z0-9']+/g, ' ').trim().split(/\s+/).join(' ');
// The multilingual Whisper, and espeak-ng French in the repository (scripts/make-speech-clips):
// "Bonjour. Je m'appelle Marie et j'habite à Paris. Le matin, je bois un café avec du lait. Le
// soir, je mange du pain et du fromage."
const multilingual = '@local/whisper-base';
const french = path.join(__dirname, '..', '..', '..', 'data', 'speech', 'fr.flac');
// A translation of the French clip: "coffee" (espeak says "café" clearly), English around it,
// no French left. faster-whisper int8 on the same weights: "Hello. I called Mary and I am going
// to Paris. Again, I see a coffee with bread. ..."; ingle int8: "Hello. I called Marie and I am
// here. Again, I see a coffee with Bure. ..." (espeak's French is hard: only some words carry).
const englishWords = ['i', 'and', 'with', 'the', 'a', 'to'];
const frenchWords = ['je', 'et', 'avec', 'du', 'le', 'bonjour'];
const translatedFromFrench = (words) => words.includes('coffee')
  && englishWords.filter((w) => words.includes(w)).length >= 2
  && !frenchWords.some((w) => words.includes(w));

test('audio.transcriptions: from a file stream and from toFile, in every format', async () => {
  const transcription = await client.audio.transcriptions.create({ file: fs.createReadStream(beckett), model: whisper });
  assert.equal(words(transcription.text), beckettWords, transcription.text);
  assert.equal(transcription.usage.type, 'duration');
  assert.ok(Math.abs(transcription.usage.seconds - 9.96) < 0.05, `${transcription.usage.seconds}`);
  const fromBuffer = await client.audio.transcriptions.create({
    file: await toFile(fs.readFileSync(beckett), 'beckett.wav'), model: whisper, language: 'en', temperature: 0,
  });
  assert.equal(fromBuffer.text, transcription.text);
  const verbose = await client.audio.transcriptions.create({
    file: fs.createReadStream(beckett), model: whisper, response_format: 'verbose_json', timestamp_granularities: ['word'],
  });
  assert.equal(verbose.text, transcription.text);
  assert.equal(words(verbose.words.map((w) => w.word).join(' ')), beckettWords);
  assert.ok(verbose.words.every((w, i) => w.start <= w.end && (i === 0 || verbose.words[i - 1].start <= w.start)));
  assert.equal(verbose.segments, undefined, 'segments only when asked for');
  const text = await client.audio.transcriptions.create({ file: fs.createReadStream(beckett), model: whisper, response_format: 'text' });
  assert.equal(typeof text, 'string');
  assert.equal(text.trim(), transcription.text);
  const vtt = await client.audio.transcriptions.create({ file: fs.createReadStream(beckett), model: whisper, response_format: 'vtt' });
  assert.match(vtt, /^WEBVTT\n\n00:00:00\.000 --> 00:00:\d\d\.\d{3}\n/);
});

test('audio.transcriptions: streamed events', async () => {
  const whole = await client.audio.transcriptions.create({ file: fs.createReadStream(beckett), model: whisper });
  const stream = await client.audio.transcriptions.create({ file: fs.createReadStream(beckett), model: whisper, stream: true });
  let streamed = '';
  const types = [];
  let done;
  for await (const event of stream) {
    types.push(event.type);
    if (event.type === 'transcript.text.delta') streamed += event.delta;
    if (event.type === 'transcript.text.done') done = event;
  }
  assert.ok(types.length >= 2 && types.at(-1) === 'transcript.text.done', types.join());
  assert.equal(streamed.trim(), whole.text);
  assert.equal(done.text, whole.text);
  assert.equal(done.usage.type, 'duration');
});

test('audio.transcriptions and translations: errors name the parameter', async () => {
  await assert.rejects(
    client.audio.transcriptions.create({ file: fs.createReadStream(beckett), model: whisper, language: 'de' }),
    (e) => e instanceof OpenAI.BadRequestError && e.param === 'language',
  );
  await assert.rejects(
    client.audio.transcriptions.create({ file: await toFile(Buffer.from('not audio'), 'notes.wav'), model: whisper }),
    (e) => e instanceof OpenAI.BadRequestError && e.param === 'file',
  );
  // tiny.en is English-only: it cannot translate.
  await assert.rejects(
    client.audio.translations.create({ file: fs.createReadStream(beckett), model: whisper }),
    (e) => e instanceof OpenAI.BadRequestError && e.param === 'model' && /English-only/.test(e.message)
      && /cannot translate/.test(e.message),
  );
  const after = await client.audio.transcriptions.create({ file: fs.createReadStream(beckett), model: whisper });
  assert.equal(words(after.text), beckettWords);
});

test('audio.transcriptions and translations on the multilingual Whisper: French detected, translated', async () => {
  const heard = await client.audio.transcriptions.create({ file: fs.createReadStream(french), model: multilingual, response_format: 'verbose_json' });
  assert.equal(heard.language, 'french', heard.text);
  assert.equal(heard.task, 'transcribe');
  assert.ok(words(heard.text).split(' ').includes('bonjour'), heard.text);
  const translation = await client.audio.translations.create({ file: fs.createReadStream(french), model: multilingual });
  assert.deepEqual(Object.keys(translation), ['text']);
  assert.ok(translatedFromFrench(words(translation.text).split(' ')), translation.text);
  const verbose = await client.audio.translations.create({
    file: await toFile(fs.readFileSync(french), 'fr.flac'), model: multilingual, response_format: 'verbose_json',
  });
  assert.equal(verbose.task, 'translate');
  assert.equal(verbose.language, 'english');
  assert.equal(verbose.text, translation.text);
  assert.ok(verbose.segments.length >= 1 && Math.abs(verbose.duration - 11.17) < 0.01, JSON.stringify(verbose));
});

// --- Responses ---------------------------------------------------------------------------

const qwen = '@local/qwen2.5-coder-0.5b-instruct';

test('responses: create, the stream helper, retrieve, input items, delete', async () => {
  const first = await client.responses.create({ model: chat, input: 'Name the capital of France.', temperature: 0, max_output_tokens: 20 });
  assert.match(first.output_text, /Paris/);
  const events = [];
  const stream = client.responses.stream({
    model: chat, input: 'And of Spain?', previous_response_id: first.id, temperature: 0, max_output_tokens: 20,
  });
  stream.on('response.output_text.delta', (event) => events.push(event.delta));
  const second = await stream.finalResponse();
  assert.equal(events.join(''), second.output_text);
  assert.ok(second.usage.input_tokens >= first.usage.total_tokens);
  assert.ok(second.usage.input_tokens_details.cached_tokens > 0);
  assert.equal((await client.responses.retrieve(second.id)).output_text, second.output_text);
  const items = [];
  for await (const item of client.responses.inputItems.list(second.id)) items.push(item);
  assert.equal(items[0].content[0].text, 'And of Spain?');
  const counted = await client.responses.inputTokens.count({ model: chat, input: 'Name the capital of France.' });
  assert.equal(counted.input_tokens, first.usage.input_tokens);
  await client.responses.delete(first.id);
  await assert.rejects(client.responses.retrieve(first.id), OpenAI.NotFoundError);
  await assert.rejects(
    client.responses.create({ model: chat, input: 'Hi', tools: [{ type: 'web_search' }] }),
    (err) => err instanceof OpenAI.BadRequestError && err.param === 'tools[0].type',
  );
});

test('responses: a function call and its output over two turns, by id and with the whole history', async () => {
  const tools = [{
    type: 'function', name: 'get_weather', description: 'Get the current weather in a city.', strict: false,
    parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
  }];
  const input = [{ role: 'user', content: "What's the weather in Paris right now?" }];
  const first = await client.responses.create({ model: qwen, input, tools, temperature: 0, max_output_tokens: 100 });
  const call = first.output.find((item) => item.type === 'function_call');
  assert.equal(call?.name, 'get_weather', JSON.stringify(first.output));
  const answer = { type: 'function_call_output', call_id: call.call_id, output: '{"temperature_c": 21}' };
  const byId = await client.responses.create({
    model: qwen, tools, temperature: 0, max_output_tokens: 60, previous_response_id: first.id, input: [answer],
  });
  const whole = await client.responses.create({
    model: qwen, tools, temperature: 0, max_output_tokens: 60, store: false, input: [...input, call, answer],
  });
  assert.match(byId.output_text, /21/);
  assert.equal(byId.output_text, whole.output_text);
});
