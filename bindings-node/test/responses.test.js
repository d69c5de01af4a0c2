'use strict';
// client.responses on the Node package, greedy on the real models: create as chat answers,
// the events of a stream and the stream() helper, a conversation continued by
// previous_response_id, stored responses (retrieve, inputItems, delete), function calls over
// two turns on Qwen2.5-Coder, parse, a user's predictor, aborts, and errors naming the field.
const test = require('node:test');
const assert = require('node:assert/strict');
const {
  OpenAI, BadRequestError, NotFoundError, InternalServerError, APIUserAbortError, predictor, Parameter,
} = require('..');

const smol = '@local/smollm2-135m-instruct';
const qwen = '@local/qwen2.5-coder-0.5b-instruct';
const question = 'Name the capital of France.';

const echo = predictor({ tag: '@test/responses-echo', inputs: [Parameter.ChatMessages({ name: 'messages' })] },
  function* echoWords({ messages }) {
    for (const word of messages.at(-1).content.split(' ')) yield `${word} `;
  });
const breaks = predictor({ tag: '@test/responses-breaks', inputs: [Parameter.ChatMessages({ name: 'messages' })] },
  function* saysOneWordThenFails() {
    yield 'partial ';
    throw new Error('the predictor broke');
  });
const client = new OpenAI({ predictors: [echo, breaks] });

test('create answers as chat does, with output_text and usage', async () => {
  const response = await client.responses.create({
    model: smol, input: question, instructions: 'Be brief.', temperature: 0, max_output_tokens: 30,
  });
  const chat = await client.chat.completions.create({
    model: smol, temperature: 0, max_tokens: 30,
    messages: [{ role: 'system', content: 'Be brief.' }, { role: 'user', content: question }],
  });
  assert.equal(response.object, 'response');
  assert.match(response.id, /^resp_/);
  assert.equal(response.status, 'completed');
  assert.equal(response.output_text, chat.choices[0].message.content);
  assert.match(response.output_text, /Paris/);
  assert.equal(response.output[0].content[0].type, 'output_text');
  assert.equal(response.usage.input_tokens, chat.usage.prompt_tokens);
  assert.equal(response.access_programs, null);
  const counted = await client.responses.inputTokens.count({ model: smol, input: question, instructions: 'Be brief.' });
  assert.deepEqual(counted, { object: 'response.input_tokens', input_tokens: response.usage.input_tokens });
});

test('a stream is OpenAI\'s events in order, and the helper gives the final response', async () => {
  const events = [];
  for await (const event of await client.responses.create({
    model: smol, input: question, temperature: 0, max_output_tokens: 20, stream: true,
  })) events.push(event);
  const kinds = events.map((e) => e.type);
  assert.deepEqual(kinds.slice(0, 4), ['response.created', 'response.in_progress',
    'response.output_item.added', 'response.content_part.added']);
  assert.match(kinds.at(-1), /^response\.(completed|incomplete)$/);
  assert.deepEqual(events.map((e) => e.sequence_number), [...events.keys()]);
  const text = events.filter((e) => e.type === 'response.output_text.delta').map((e) => e.delta).join('');
  assert.equal(text, events.at(-1).response.output_text);

  const helper = client.responses.stream({ model: smol, input: question, temperature: 0, max_output_tokens: 20 });
  const deltas = [];
  helper.on('response.output_text.delta', (event) => deltas.push(event.delta));
  const final = await helper.finalResponse();
  assert.equal(deltas.join(''), text);
  assert.equal(final.output_text, text);
  // Iterated, then left with `break`: generation stops, and the client goes on.
  const cut = client.responses.stream({ model: smol, input: 'Count to a hundred.', max_output_tokens: 500 });
  let seen = 0;
  for await (const event of cut) {
    if (event.type === 'response.output_text.delta' && ++seen === 3) break;
  }
  await assert.rejects(cut.done(), APIUserAbortError);
});

test('previous_response_id continues a stored conversation; items, retrieve, delete', async () => {
  const first = await client.responses.create({ model: smol, input: 'My name is Ada.', temperature: 0, max_output_tokens: 20 });
  const second = await client.responses.create({
    model: smol, input: [{ role: 'user', content: 'What is my name?' }], temperature: 0, max_output_tokens: 20,
    previous_response_id: first.id,
  });
  assert.equal(second.previous_response_id, first.id);
  assert.ok(second.usage.input_tokens >= first.usage.total_tokens, 'the first turn is in the prompt');
  assert.ok(second.usage.input_tokens_details.cached_tokens > 0, 'and its KV came from the cache');
  assert.equal((await client.responses.retrieve(second.id)).output_text, second.output_text);
  const page = await client.responses.inputItems.list(second.id);
  assert.equal(page.object, 'list');
  assert.equal(page.data[0].content[0].text, 'What is my name?');
  const all = [];
  for await (const item of client.responses.inputItems.list(first.id, { limit: 1 })) all.push(item);
  assert.equal(all.length, 1);
  assert.equal(await client.responses.delete(first.id), undefined);
  await assert.rejects(client.responses.retrieve(first.id), NotFoundError);
  await assert.rejects(client.responses.create({ model: smol, input: 'Hi', previous_response_id: first.id }),
    (error) => error instanceof NotFoundError && error.param === 'previous_response_id');
});

test('a function call and its output over two turns', async () => {
  const tools = [{
    type: 'function', name: 'get_weather', description: 'Get the current weather in a city.',
    parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
  }];
  const first = await client.responses.create({
    model: qwen, input: "What's the weather in Paris right now?", tools, temperature: 0, max_output_tokens: 100,
  });
  const call = first.output.find((item) => item.type === 'function_call');
  assert.ok(call, JSON.stringify(first.output));
  assert.equal(call.name, 'get_weather');
  assert.equal(JSON.parse(call.arguments).city, 'Paris');
  assert.equal(first.output_text, '');
  const second = await client.responses.create({
    model: qwen, previous_response_id: first.id, tools, temperature: 0, max_output_tokens: 60,
    input: [{ type: 'function_call_output', call_id: call.call_id, output: '{"temperature_c": 21}' }],
  });
  assert.match(second.output_text, /21/);
});

test('parse reads the output as JSON when text.format asks for it', async () => {
  const schema = { type: 'object', properties: { city: { type: 'string' } }, required: ['city'], additionalProperties: false };
  const parsed = await client.responses.parse({
    model: qwen, input: 'Which city is the capital of France? Answer in JSON.', temperature: 0, max_output_tokens: 40,
    text: { format: { type: 'json_schema', name: 'capital', schema, strict: true } },
  });
  assert.equal(typeof parsed.output_parsed.city, 'string');
  assert.deepEqual(parsed.output_parsed, JSON.parse(parsed.output_text));
});

test('a user\'s chat predictor serves Responses, and its failure is response.failed', async () => {
  const response = await client.responses.create({ model: '@test/responses-echo', input: 'hello big world' });
  assert.equal(response.output_text, 'hello big world ');
  const events = [];
  for await (const event of await client.responses.create({ model: '@test/responses-breaks', input: 'x', stream: true })) {
    events.push(event);
  }
  const failed = events.at(-1);
  assert.equal(failed.type, 'response.failed');
  assert.equal(failed.response.status, 'failed');
  assert.equal(failed.response.error.code, 'server_error');
  assert.match(failed.response.error.message, /the predictor broke/);
  assert.equal(failed.response.output_text, 'partial ');
  await assert.rejects(client.responses.create({ model: '@test/responses-breaks', input: 'x' }), InternalServerError);
  await assert.rejects(client.responses.stream({ model: '@test/responses-breaks', input: 'x' }).finalResponse(),
    (error) => error instanceof InternalServerError && /the predictor broke/.test(error.message));
  // Aborted at once, before the stream has even started: nothing is generated.
  const early = client.responses.stream({ model: smol, input: 'Count to a hundred.', max_output_tokens: 500 });
  let deltas = 0;
  early.on('response.output_text.delta', () => deltas++);
  early.abort();
  await assert.rejects(early.done(), APIUserAbortError);
  assert.equal(deltas, 0);
});

test('bad requests name the field; an abort stops generation', async () => {
  const cases = [
    [{ model: smol, input: 'Hi', tools: [{ type: 'web_search' }] }, 'tools[0].type'],
    [{ model: smol, input: 'Hi', background: true }, 'background'],
    [{ model: smol }, 'input'],
    [{ model: smol, input: 'Hi', max_output_tokens: 0 }, 'max_output_tokens'],
  ];
  for (const [body, param] of cases) {
    await assert.rejects(client.responses.create(body), (error) => error instanceof BadRequestError && error.param === param);
  }
  await assert.rejects(client.responses.inputItems.list('resp_x', { limit: 'ten' }),
    (error) => error instanceof BadRequestError && error.param === 'limit');
  const controller = new AbortController();
  // Greedy on this prompt, the answer runs to max_output_tokens (seconds): the abort lands while
  // it generates (a sampled answer to a short prompt could end before it).
  const started = client.responses.create({ model: smol, input: 'Write a very long story about a dragon.',
    max_output_tokens: 500, temperature: 0 }, { signal: controller.signal });
  setTimeout(() => controller.abort(), 200);
  await assert.rejects(started, APIUserAbortError);
  const after = await client.responses.create({ model: smol, input: 'Hi', max_output_tokens: 3, store: false });
  assert.equal(after.status, 'incomplete');
});
