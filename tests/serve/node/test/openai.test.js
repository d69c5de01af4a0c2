'use strict';
// `ingle serve` driven by the official `openai` npm package. scripts/test-serve starts the
// server and passes its URL (INGLE_SERVE_URL) and API key (INGLE_SERVE_KEY).
const test = require('node:test');
const assert = require('node:assert/strict');
const { OpenAI } = require('openai');

const client = new OpenAI({ baseURL: process.env.INGLE_SERVE_URL, apiKey: process.env.INGLE_SERVE_KEY, maxRetries: 0 });
const chat = '@local/smollm2-135m-instruct';
const messages = [{ role: 'user', content: 'What is the capital of France?' }];

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
  assert.deepEqual(ids, [chat, '@local/all-minilm-l6-v2', '@local/piper-en-us-joe-medium']);
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
