'use strict';
// Anthropic: the @anthropic-ai/sdk client's Messages API in process: create, raw events, the
// stream helper, tools over two turns, countTokens, Anthropic-shaped errors, a user's predictor.
const test = require('node:test');
const assert = require('node:assert/strict');
const {
  Anthropic, OpenAI, BadRequestError, NotFoundError, InternalServerError, APIUserAbortError, Parameter, predictor,
} = require('..');

const model = '@local/smollm2-135m-instruct';
const qwen = '@local/qwen2.5-coder-0.5b-instruct'; // SmolLM's template has no place for tools
const capital = [{ role: 'user', content: 'What is the capital of France? Answer in one word.' }];
const weather = {
  name: 'get_weather',
  description: 'Get the current weather in a city.',
  input_schema: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
};

const echo = predictor({
  tag: '@test/anthropic-echo',
  inputs: [Parameter.ChatMessages({ name: 'messages' })],
}, function* echoWords({ messages }) {
  const { content } = messages.at(-1);
  const text = typeof content === 'string' ? content : content.map((part) => part.text).join(' ');
  for (const word of text.split(/\s+/)) yield `${word} `;
});

const client = new Anthropic({ apiKey: 'ignored', predictors: [echo] });

test('create is an Anthropic message', async () => {
  const message = await client.messages.create({ model, max_tokens: 16, temperature: 0, messages: capital });
  assert.equal(message.type, 'message');
  assert.equal(message.role, 'assistant');
  assert.match(message.content[0].text.toLowerCase(), /paris/);
  assert.ok(['end_turn', 'max_tokens'].includes(message.stop_reason));
  assert.ok(message.usage.output_tokens > 0);
});

test('raw events: message_start to message_stop, no ping', async () => {
  const stream = await client.messages.create({ model, max_tokens: 8, temperature: 0, messages: capital, stream: true });
  const kinds = [];
  for await (const event of stream) kinds.push(event.type);
  assert.equal(kinds[0], 'message_start');
  assert.equal(kinds.at(-1), 'message_stop');
  assert.ok(!kinds.includes('ping'));
  assert.ok(kinds.includes('content_block_delta') && kinds.includes('message_delta'));
});

test('the stream helper agrees with create', async () => {
  const whole = await client.messages.create({ model, max_tokens: 24, temperature: 0, messages: capital });
  const stream = client.messages.stream({ model, max_tokens: 24, temperature: 0, messages: capital });
  const deltas = [];
  let snapshot = '';
  const blocks = [];
  stream.on('text', (delta, text) => { deltas.push(delta); snapshot = text; });
  stream.on('contentBlock', (block) => blocks.push(block));
  const final = await stream.finalMessage();
  assert.equal(deltas.join(''), whole.content[0].text);
  assert.equal(snapshot, whole.content[0].text);
  assert.equal(await stream.finalText(), whole.content[0].text);
  assert.deepEqual(blocks, final.content);
  assert.equal(final.stop_reason, whole.stop_reason);
  assert.equal(final.usage.output_tokens, whole.usage.output_tokens);
});

test('tools over two turns', async () => {
  const question = { role: 'user', content: 'What is the weather in Paris?' };
  const stream = client.messages.stream({
    model: qwen, max_tokens: 64, temperature: 0, tools: [weather],
    tool_choice: { type: 'tool', name: 'get_weather' }, messages: [question],
  });
  const inputs = [];
  stream.on('inputJson', (partial, input) => inputs.push(input));
  const call = await stream.finalMessage();
  assert.equal(call.stop_reason, 'tool_use');
  const use = call.content.find((block) => block.type === 'tool_use');
  assert.equal(use.name, 'get_weather');
  assert.match(use.input.city, /paris/i);
  assert.deepEqual(inputs.at(-1), use.input);
  const answer = await client.messages.create({
    model: qwen, max_tokens: 48, temperature: 0, tools: [weather],
    messages: [question, { role: 'assistant', content: call.content }, {
      role: 'user',
      content: [
        { type: 'tool_result', tool_use_id: use.id, content: 'Sunny, 24 degrees.' },
        // Qwen 0.5B answers a bare tool result by calling again; asked, it answers.
        { type: 'text', text: 'Thanks. So, what is the weather in Paris? Answer in plain words.' },
      ],
    }],
  });
  const text = answer.content.filter((b) => b.type === 'text').map((b) => b.text).join('').toLowerCase();
  assert.ok(text.includes('sunny') || text.includes('24'), JSON.stringify(answer));
});

test('countTokens is what create reads', async () => {
  const counted = await client.messages.countTokens({ model, system: 'Be brief.', messages: capital });
  const message = await client.messages.create({ model, max_tokens: 4, system: 'Be brief.', messages: capital });
  const { usage } = message;
  assert.equal(counted.input_tokens, usage.input_tokens + usage.cache_read_input_tokens);
});

test('errors are Anthropic-shaped and the client goes on', async () => {
  await assert.rejects(client.messages.create({ model, messages: capital }), (error) => {
    assert.ok(error instanceof BadRequestError);
    assert.equal(error.status, 400);
    assert.equal(error.param, 'max_tokens');
    assert.deepEqual(error.error, { type: 'error', error: { type: 'invalid_request_error', message: error.message } });
    return true;
  });
  await assert.rejects(client.messages.create({ model: '@nobody/nothing', max_tokens: 4, messages: capital }), (error) => {
    assert.ok(error instanceof NotFoundError);
    assert.equal(error.error.error.type, 'not_found_error');
    return true;
  });
  const failed = client.messages.stream({ model, max_tokens: -1, messages: capital });
  failed.on('error', () => {});
  await assert.rejects(failed.finalMessage(), (error) => error instanceof BadRequestError && error.error.type === 'error');
  const message = await client.messages.create({ model, max_tokens: 4, messages: capital });
  assert.ok(message.content.length > 0);
});

test('aborting the stream helper stops generation', async () => {
  const stream = client.messages.stream({
    model, max_tokens: 1500, messages: [{ role: 'user', content: 'Write a very long story about a dragon.' }],
  });
  let seen = 0;
  let aborted = null;
  stream.on('text', () => { seen += 1; if (seen === 5) stream.abort(); });
  stream.on('abort', (error) => { aborted = error; });
  await assert.rejects(stream.done(), (error) => error instanceof APIUserAbortError);
  assert.ok(aborted instanceof APIUserAbortError, "'abort', as the SDK emits it");
  const metrics = new OpenAI();
  for (let i = 0; i < 500; i += 1) {
    const m = await metrics.metrics(model);
    if (m.active_requests === 0 && m.queued_requests === 0) return;
    await new Promise((resolve) => { setTimeout(resolve, 10); });
  }
  assert.fail('generation went on after abort()');
});

test("a user's chat predictor serves messages", async () => {
  const message = await client.messages.create({
    model: '@test/anthropic-echo', max_tokens: 16, messages: [{ role: 'user', content: 'hello big world' }],
  });
  assert.equal(message.content[0].text, 'hello big world ');
  const stream = client.messages.stream({
    model: '@test/anthropic-echo', max_tokens: 16,
    messages: [{ role: 'user', content: [{ type: 'text', text: 'one' }, { type: 'text', text: 'two' }] }],
  });
  assert.deepEqual((await stream.finalText()).split(/\s+/).filter(Boolean), ['one', 'two']);
});

const failing = predictor({
  tag: '@test/anthropic-fails',
  inputs: [Parameter.ChatMessages({ name: 'messages' })],
}, function* failsMidway() {
  yield 'Hello ';
  throw new Error('the predictor broke');
});

test('a failure after the stream began rejects as the SDK does, Anthropic-shaped', async () => {
  const claude = new Anthropic({ predictors: [failing] });
  const body = { model: '@test/anthropic-fails', max_tokens: 8, messages: [{ role: 'user', content: 'hi' }] };
  const texts = [];
  const stream = claude.messages.stream(body);
  stream.on('text', (text) => texts.push(text));
  await assert.rejects(stream.finalMessage(), (error) => {
    assert.ok(error instanceof InternalServerError && error instanceof Anthropic.APIError);
    assert.equal(error.error.type, 'error');
    assert.match(error.error.error.message, /broke/);
    return true;
  });
  assert.deepEqual(texts, ['Hello ']);
  const raw = await claude.messages.create({ ...body, stream: true });
  await assert.rejects((async () => { for await (const event of raw) void event; })(), InternalServerError);
});

test('argument errors are Anthropic-shaped; the SDK names are there', async () => {
  await assert.rejects(client.messages.countTokens({ model, messages: [{ role: 'user', content: '\ud800' }] }), (error) => {
    assert.ok(error instanceof BadRequestError);
    assert.equal(error.error.type, 'error');
    return true;
  });
  assert.equal(Anthropic.BadRequestError, BadRequestError);
  assert.ok(new BadRequestError(400, null, 'x') instanceof Anthropic.AnthropicError);
  assert.equal(typeof require('..').MessageStream, 'function');
});
