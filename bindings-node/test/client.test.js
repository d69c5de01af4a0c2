'use strict';
// End-to-end tests of the Node package on the real default model (scripts/fetch-models).
const test = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');
const os = require('node:os');
const { OpenAI, BadRequestError, NotFoundError, InternalServerError, APIError, OpenAIError, APIUserAbortError } =
  require('..');

const model = '@local/smollm2-135m-instruct';
const france = [
  { role: 'system', content: 'Be brief.' },
  { role: 'user', content: 'Name the capital of France.' },
];
const story = [{ role: 'user', content: 'Write a very long story about a dragon.' }];
// Greedy: the story runs to max_tokens every time (a sampled one may end early, leaving the
// cancellation tests nothing to cancel).
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

test('chat create answers with the OpenAI shape', async () => {
  const r = await client.chat.completions.create({ model, messages: france, max_tokens: 12, temperature: 0 });
  assert.match(r.choices[0].message.content, /Paris/);
  assert.equal(r.object, 'chat.completion');
  assert.equal(r.choices[0].message.role, 'assistant');
  assert.ok(r.id.startsWith('chatcmpl-'));
  assert.equal(r.usage.total_tokens, r.usage.prompt_tokens + r.usage.completion_tokens);
  assert.deepEqual(Object.keys(r), ['id', 'object', 'created', 'model', 'choices', 'usage']);
});

test('metrics count what a request did', async () => {
  await waitIdle();
  const before = await client.metrics(model);
  await client.chat.completions.create({ model, messages: france, max_tokens: 6, temperature: 0 });
  const after = await client.metrics(model);
  assert.ok(after.prompt_tokens - before.prompt_tokens >= 10);
  assert.equal(after.time_to_first_token.count, before.time_to_first_token.count + 1);
  assert.deepEqual(after.time_to_first_token.buckets.at(-1), [null, after.time_to_first_token.count]);
  assert.ok(after.kv_cells_total > 0 && after.memory_bytes > 50_000_000);
});

test('chat stream equals create, with a usage chunk', async () => {
  const params = { model, messages: france, max_tokens: 12, temperature: 0.8, seed: 3 };
  const whole = await client.chat.completions.create(params);
  const stream = await client.chat.completions.create(
    { ...params, stream: true, stream_options: { include_usage: true } },
  );
  const chunks = [];
  for await (const chunk of stream) chunks.push(chunk);
  const text = chunks.map((c) => c.choices[0]?.delta?.content ?? '').join('');
  assert.equal(text, whole.choices[0].message.content);
  assert.equal(chunks[0].choices[0].delta.role, 'assistant');
  assert.deepEqual(chunks.at(-1).choices, []);
  assert.equal(chunks.at(-1).usage.total_tokens, whole.usage.total_tokens);
  assert.ok(chunks.every((c) => c.object === 'chat.completion.chunk' && c.id === chunks[0].id));
});

test('completions, models and predictions', async () => {
  const r = await client.completions.create({ model, prompt: 'Once upon a time', max_tokens: 16, temperature: 0 });
  assert.equal(r.object, 'text_completion');
  assert.equal(r.usage.completion_tokens, 16);
  const stream = await client.completions.create({ model, prompt: 'Once upon a time', max_tokens: 16, temperature: 0, stream: true });
  let text = '';
  for await (const chunk of stream) text += chunk.choices[0]?.text ?? '';
  assert.equal(text, r.choices[0].text);

  const ids = [];
  for await (const m of client.models.list()) ids.push(m.id);
  const tags = [model, '@local/qwen2.5-coder-0.5b-instruct', '@local/all-minilm-l6-v2', '@local/piper-en-us-joe-medium', '@local/whisper-tiny-en'];
  // The optional 1.5B (not in `ingle pull --all`) is served once pulled, after the built-ins.
  const dir = process.env.INGLE_MODELS_DIR
    || path.join(process.env.XDG_CACHE_HOME || path.join(os.homedir(), '.cache'), 'ingle', 'models');
  if (fs.existsSync(path.join(dir, 'Qwen2.5-Coder-1.5B-Instruct-Q4_K_M.gguf'))) {
    tags.push('@local/qwen2.5-coder-1.5b-instruct');
  }
  tags.push('@local/whisper-base'); // the multilingual Whisper, a catalog model
  // Each also without its namespace, for frameworks that read `@local/` as a provider.
  assert.deepEqual(ids, [...tags, ...tags.map((t) => t.replace('@local/', ''))]);
  const page = await client.models.list();
  assert.equal(page.object, 'list');
  assert.equal(page.data[0].id, model);
  assert.deepEqual(JSON.parse(JSON.stringify(page)), { object: 'list', data: page.data });
  assert.equal((await client.models.retrieve(model)).owned_by, 'ingle');
  await assert.rejects(client.models.retrieve('@nobody/nothing'), NotFoundError);

  const inputs = { prompt: 'The capital of France is', max_tokens: 4, temperature: 0 };
  const p = await client.predictions.create({ tag: model, inputs });
  assert.ok(p.id.startsWith('pred_') && p.tag === model && p.error === null && p.latency > 0);
  const partial = [];
  for await (const q of client.predictions.stream({ tag: model, inputs })) partial.push(q);
  assert.ok(partial.length >= 2 && partial.every((q) => q.id === partial[0].id));
});

test('errors are openai-style classes with param and code', async () => {
  const bad = async (params) => client.chat.completions.create({ model, messages: france, max_tokens: 4, ...params });
  await assert.rejects(bad({ temperature: 5 }), (e) => {
    assert.ok(e instanceof BadRequestError && e instanceof APIError && e instanceof OpenAIError);
    assert.equal(e.status, 400);
    assert.equal(e.param, 'temperature');
    assert.match(e.message, /temperature/);
    return true;
  });
  await assert.rejects(bad({ messages: [{ role: 'robot', content: 'hi' }] }), (e) => e.param === 'messages[0].role');
  await assert.rejects(bad({ frobnicate: 1 }), (e) => e instanceof BadRequestError && /frobnicate/.test(e.message));
  await assert.rejects(bad({ max_tokens: 10 ** 6 }), (e) => e.code === 'context_length_exceeded');
  await assert.rejects(bad({ model: '@nobody/nothing' }), (e) => {
    assert.ok(e instanceof NotFoundError);
    assert.equal(e.status, 404);
    assert.equal(e.code, 'model_not_found');
    return true;
  });
  await assert.rejects(bad({ model: '@nobody/nothing', stream: true }), NotFoundError);
  await assert.rejects(client.predictions.create({ tag: model, inputs: { max_tokens: 'many' } }), (e) => e.param === 'max_tokens');
  // Still usable.
  const r = await client.chat.completions.create({ model, messages: france, max_tokens: 3 });
  assert.equal(r.usage.completion_tokens, 3);
});

test('a missing model file and a bad config', async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ingle-'));
  const config = path.join(dir, 'ingle.toml');
  fs.writeFileSync(config, '[[predictors]]\ntag = "@me/gone"\nbackend = "llama"\nmodel = "gone.gguf"\n');
  const c = new OpenAI({ config });
  await assert.rejects(c.chat.completions.create({ model: '@me/gone', messages: france }), (e) => {
    assert.ok(e instanceof NotFoundError, String(e)); // a 404 that says how, not a 500 to retry
    assert.match(e.message, /gone\.gguf.*put the file there, or fix the path in the config/);
    return true;
  });
  assert.throws(() => new OpenAI({ config: path.join(dir, 'missing.toml') }), BadRequestError);
});

test('break out of for await cancels generation', async () => {
  const before = (await waitIdle()).cancelled_requests;
  const stream = await client.chat.completions.create({ model, messages: story, temperature: 0, max_tokens: 500, stream: true });
  let n = 0;
  for await (const _ of stream) if (++n === 3) break;
  assert.equal((await waitIdle()).cancelled_requests, before + 1);
});

test('aborting the signal cancels generation', async () => {
  const before = (await waitIdle()).cancelled_requests;
  const controller = new AbortController();
  const stream = await client.chat.completions.create(
    { model, messages: story, temperature: 0, max_tokens: 500, stream: true },
    { signal: controller.signal },
  );
  let n = 0;
  await assert.rejects(async () => {
    for await (const _ of stream) if (++n === 3) controller.abort();
  }, APIUserAbortError);
  assert.equal(n, 3);
  assert.equal((await waitIdle()).cancelled_requests, before + 1);
  // An already-aborted signal rejects at once.
  await assert.rejects(
    client.chat.completions.create({ model, messages: france }, { signal: controller.signal }),
    APIUserAbortError,
  );
});

test('aborting a whole-response create stops generation', async () => {
  const before = (await waitIdle()).cancelled_requests;
  const controller = new AbortController();
  const start = Date.now();
  const pending = client.chat.completions.create(
    { model, messages: story, temperature: 0, max_tokens: 1000 },
    { signal: controller.signal },
  );
  setTimeout(() => controller.abort(), 300);
  await assert.rejects(pending, APIUserAbortError);
  const idle = await waitIdle();
  assert.ok(Date.now() - start < 3000, 'generation went on after the abort'); // 1000 tokens: ~10 s
  assert.equal(idle.cancelled_requests, before + 1);
});

test('the event loop keeps running during a long completion', async () => {
  let ticks = 0;
  const timer = setInterval(() => ticks++, 1);
  const start = Date.now();
  await client.chat.completions.create({ model, messages: story, max_tokens: 48 });
  const elapsed = Date.now() - start;
  clearInterval(timer);
  assert.ok(ticks > elapsed * 0.3, `${ticks} ticks in ${elapsed} ms`);
});

test('concurrent requests on one client', async () => {
  const answers = await Promise.all(
    [0, 1, 2, 3].map(() => client.chat.completions.create({ model, messages: france, max_tokens: 10, temperature: 0 })),
  );
  for (const a of answers) assert.match(a.choices[0].message.content, /Paris/);
});

test('ESM import and version', async () => {
  const esm = await import('../index.mjs');
  assert.equal(esm.default, OpenAI);
  assert.equal(esm.OpenAI, OpenAI);
  const cargo = fs.readFileSync(path.join(__dirname, '..', '..', 'Cargo.toml'), 'utf8');
  assert.equal(esm.version, cargo.match(/^version = "(.+)"/m)[1]);
});

test('tokenize and detokenize round-trip through the method table', async () => {
  const text = 'Name the capital of France.';
  const { tokens } = await client.tokenize({ model, content: text });
  assert.ok(tokens.length > 0 && tokens.every(Number.isInteger), JSON.stringify(tokens));
  assert.equal((await client.detokenize({ model, tokens })).content, text);
  const pieces = (await client.tokenize({ model, content: '<|im_start|>Hi', with_pieces: true })).tokens;
  assert.equal(pieces[0].piece, '<|im_start|>');
  assert.equal(pieces.map((p) => p.piece).join(''), '<|im_start|>Hi');
  await assert.rejects(client.detokenize({ model, tokens: [1, -1] }),
    (e) => e instanceof BadRequestError && e.param === 'tokens[1]');
});

test('chat.completions.render gives the prompt the template makes, and its tokens are what create counts', async () => {
  const messages = [{ role: 'user', content: 'Name the capital of France.' }];
  const prompt = await client.chat.completions.render({ model, messages });
  assert.ok(prompt.endsWith('<|im_start|>user\nName the capital of France.<|im_end|>\n<|im_start|>assistant\n'), prompt);
  const { tokens } = await client.tokenize({ model, content: prompt });
  const created = await client.chat.completions.create({ model, messages, max_tokens: 1 });
  assert.equal(created.usage.prompt_tokens, tokens.length);
  await assert.rejects(client.chat.completions.render({ model, messages: [] }), (e) => e instanceof BadRequestError && e.param === 'messages');
});
