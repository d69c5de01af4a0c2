'use strict';
// client.rerank.create: an embedding model as a bi-encoder, a predictor annotated for it, errors.
const test = require('node:test');
const assert = require('node:assert/strict');
const { OpenAI, BadRequestError, Parameter, predictor, PredictorDefinitionError } = require('..');

const model = '@local/all-minilm-l6-v2';
const query = 'What is the capital of France?';
const documents = [
  'Berlin is the capital of Germany.',
  'The Eiffel Tower is a landmark in Paris.',
  'Paris is the capital and largest city of France.',
  'Bananas are rich in potassium.',
];

const overlap = predictor({
  tag: '@test/overlap',
  inputs: [Parameter.RerankQuery({ name: 'query' }), Parameter.RerankDocuments({ name: 'documents' })],
  outputs: [Parameter.RerankScores({ name: 'scores' })],
}, ({ query: q, documents: docs }) => {
  const words = new Set(q.toLowerCase().split(/\s+/));
  return docs.map((d) => d.toLowerCase().split(/\s+/).filter((w) => words.has(w)).length);
});

const client = new OpenAI({ predictors: [overlap] });

test('an embedding model ranks the Paris document first', async () => {
  const r = await client.rerank.create({ model, query, documents });
  assert.equal(r.results[0].index, 2);
  assert.equal(r.results.at(-1).index, 3);
  assert.equal(r.results[0].document.text, documents[2]);
  const scores = r.results.map((x) => x.relevance_score);
  assert.deepEqual(scores, [...scores].sort((a, b) => b - a));
  assert.ok(r.id.startsWith('rerank-') && r.usage.prompt_tokens > 0);
  const top = await client.rerank.create({
    model, query, documents: documents.map((text) => ({ text })), top_n: 1, return_documents: false,
  });
  assert.deepEqual(top.results.map((x) => [x.index, x.document]), [[2, undefined]]);
});

test('a predictor annotated for rerank serves it', async () => {
  const r = await client.rerank.create({
    model: '@test/overlap', query: 'red apple pie', documents: ['a red car', 'red apple pie recipe', 'pie'],
  });
  assert.deepEqual(r.results.map((x) => [x.index, x.relevance_score]), [[1, 3], [0, 1], [2, 1]]);
  assert.throws(() => predictor({
    tag: '@test/half',
    inputs: [Parameter.RerankQuery({ name: 'query' })],
    outputs: [Parameter.RerankScores({ name: 'scores' })],
  }, () => []), (e) => e instanceof PredictorDefinitionError && /RerankDocuments/.test(e.message));
});

test('bad requests name the parameter', async () => {
  for (const [body, param] of [
    [{ documents: ['a'] }, 'query'],
    [{ query: 'q', documents: [] }, 'documents'],
    [{ query: 'q', documents: ['a', 3] }, 'documents[1]'],
    [{ query: 'q', documents: ['a'], top_n: 0 }, 'top_n'],
  ]) {
    await assert.rejects(client.rerank.create({ model, ...body }),
      (e) => e instanceof BadRequestError && e.param === param, JSON.stringify(body));
  }
  assert.ok((await client.rerank.create({ model, query: 'q', documents: ['a'] })).results.length === 1);
});
