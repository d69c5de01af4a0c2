'use strict';
// client.embeddings.create on the real embedding model (all-MiniLM-L6-v2 on ONNX Runtime).
const test = require('node:test');
const assert = require('node:assert/strict');
const { OpenAI, BadRequestError, NotFoundError, APIUserAbortError } = require('..');

const model = '@local/all-minilm-l6-v2';
const pair = ['The capital of France is Paris.', "Paris is France's capital city.", 'I like turtles.'];
const client = new OpenAI();
const dot = (a, b) => a.reduce((sum, x, i) => sum + x * b[i], 0);

test('reference cosines, the OpenAI shape, and the Float32Array view', async () => {
  const r = await client.embeddings.create({ model, input: pair, user: 'me' });
  const v = r.data.map((d) => d.embedding);
  assert.ok(Math.abs(dot(v[0], v[1]) - 0.966) < 0.01, `paraphrase ${dot(v[0], v[1])}`);
  assert.ok(Math.abs(dot(v[0], v[2]) - 0.010) < 0.03, `unrelated ${dot(v[0], v[2])}`);
  assert.deepEqual(Object.keys(r), ['object', 'data', 'model', 'usage']);
  assert.deepEqual(Object.keys(r.data[0]), ['object', 'index', 'embedding']);
  assert.deepEqual(r.data.map((d) => d.index), [0, 1, 2]);
  assert.equal(r.usage.total_tokens, r.usage.prompt_tokens);
  assert.ok(Array.isArray(v[0]) && v[0].length === 384);
  // The matrix: one Float32Array over every row, equal to the arrays, absent from the JSON.
  const { data, rows, dims } = r.matrix;
  assert.ok(data instanceof Float32Array);
  assert.deepEqual([rows, dims, data.length], [3, 384, 3 * 384]);
  assert.deepEqual(Array.from(data.subarray(384, 768)), v[1]);
  assert.equal(JSON.stringify(r).includes('matrix'), false);
});

test('a batch equals one by one', async () => {
  const texts = Array.from({ length: 40 }, (_, n) => `${'word '.repeat(n % 17 + 1)}number ${n}`);
  const batch = (await client.embeddings.create({ model, input: texts })).matrix;
  let worst = 0;
  for (let i = 0; i < texts.length; i++) {
    const alone = (await client.embeddings.create({ model, input: texts[i] })).matrix.data;
    for (let j = 0; j < 384; j++) worst = Math.max(worst, Math.abs(alone[j] - batch.data[i * 384 + j]));
  }
  assert.ok(worst < 1e-5, `max abs difference ${worst}`);
});

test('dimensions and base64', async () => {
  const r = await client.embeddings.create({ model, input: 'Hello', dimensions: 128 });
  assert.equal(r.data[0].embedding.length, 128);
  assert.ok(Math.abs(Math.sqrt(dot(r.data[0].embedding, r.data[0].embedding)) - 1) < 1e-5);
  const floats = await client.embeddings.create({ model, input: pair });
  const encoded = await client.embeddings.create({ model, input: pair, encoding_format: 'base64' });
  encoded.data.forEach((d, i) => {
    const bytes = Buffer.from(d.embedding, 'base64');
    const decoded = Array.from({ length: bytes.length / 4 }, (_, k) => bytes.readFloatLE(4 * k));
    assert.deepEqual(decoded, floats.data[i].embedding);
  });
});

test('bad requests name the parameter; the client stays usable', async () => {
  const cases = [
    [{ input: [] }, 'input', 'at least one'],
    [{ input: '' }, 'input', 'empty string'],
    [{ input: ['a', ''] }, 'input[1]', 'empty string'],
    [{ input: Array(2049).fill('x') }, 'input', '2048'],
    [{ input: 42 }, 'input', 'a string or an array of strings'],
    [{ input: ['a', 1] }, 'input[1]', 'expected a string'],
    [{ input: [1, 2, 3] }, 'input', 'Token-id input'],
    [{ input: 'a', dimensions: 0 }, 'dimensions', 'between 1 and 384'],
    [{ input: 'a', dimensions: 385 }, 'dimensions', 'between 1 and 384'],
    [{ input: 'a', encoding_format: 'int8' }, 'encoding_format', 'base64'],
    [{ input: 'a', frobnicate: 1 }, 'frobnicate', 'Unrecognized'],
    [{ input: 'a', model: '@local/smollm2-135m-instruct' }, 'model', 'no input annotated Embedding'],
  ];
  for (const [params, param, words] of cases) {
    await assert.rejects(client.embeddings.create({ model, ...params }), (err) => {
      assert.ok(err instanceof BadRequestError, `${JSON.stringify(params)}: ${err}`);
      assert.equal(err.status, 400);
      assert.equal(err.param, param);
      assert.ok(err.message.includes(words), err.message);
      return true;
    });
  }
  await assert.rejects(client.embeddings.create({ model: '@nobody/nothing', input: 'a' }), NotFoundError);
  await assert.rejects(client.embeddings.create(null), BadRequestError);
  const aborted = AbortSignal.abort();
  await assert.rejects(client.embeddings.create({ model, input: 'a' }, { signal: aborted }), APIUserAbortError);
  await assert.rejects(
    client.chat.completions.create({ model, messages: [{ role: 'user', content: 'Hi' }] }),
    (err) => err instanceof BadRequestError && err.message.includes('no input annotated ChatMessages'),
  );
  assert.equal((await client.embeddings.create({ model, input: 'still works' })).data.length, 1);
});

test('concurrent requests on the thread pool', async () => {
  const results = await Promise.all(pair.map((input) => client.embeddings.create({ model, input })));
  const v = results.map((r) => r.data[0].embedding);
  assert.ok(Math.abs(dot(v[0], v[1]) - 0.966) < 0.01);
});
