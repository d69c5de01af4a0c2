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
  assert.deepEqual(ids, [chat, '@local/all-minilm-l6-v2']);
  assert.equal((await client.models.retrieve(chat)).id, chat);
  await assert.rejects(client.chat.completions.create({ model: '@no/such', messages }), OpenAI.NotFoundError);
  await assert.rejects(
    client.chat.completions.create({ model: chat, messages, max_tokens: 0 }),
    (err) => err instanceof OpenAI.BadRequestError && err.status === 400,
  );
});
