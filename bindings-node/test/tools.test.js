'use strict';
// Tool calls, structured output, logprobs and n on the Node package: greedy, on
// Qwen2.5-Coder-0.5B-Instruct (which can call tools) and SmolLM2 (which cannot).
const test = require('node:test');
const assert = require('node:assert/strict');
const { OpenAI, BadRequestError } = require('..');

const qwen = '@local/qwen2.5-coder-0.5b-instruct';
const smol = '@local/smollm2-135m-instruct';
const client = new OpenAI();
const paris = [{ role: 'user', content: "What's the weather in Paris right now, in celsius?" }];
const tools = [{
  type: 'function',
  function: {
    name: 'get_weather',
    description: 'Get the current weather in a city.',
    parameters: {
      type: 'object',
      properties: { city: { type: 'string' }, unit: { type: 'string', enum: ['celsius', 'fahrenheit'] } },
      required: ['city'],
    },
  },
}];
const params = { model: qwen, messages: paris, tools, temperature: 0, max_tokens: 120 };

test('a weather question calls the tool, whole and streamed alike', async () => {
  const whole = await client.chat.completions.create(params);
  const choice = whole.choices[0];
  assert.equal(choice.finish_reason, 'tool_calls');
  assert.equal(choice.message.content, null);
  assert.equal(choice.message.tool_calls.length, 1);
  const call = choice.message.tool_calls[0];
  assert.match(call.id, /^call_/);
  assert.equal(call.function.name, 'get_weather');
  assert.equal(JSON.parse(call.function.arguments).city, 'Paris');

  const deltas = [];
  let finish = null;
  for await (const chunk of await client.chat.completions.create({ ...params, stream: true })) {
    const c = chunk.choices[0];
    if (!c) continue;
    assert.equal(c.delta.content ?? '', '');
    deltas.push(...(c.delta.tool_calls ?? []));
    finish = c.finish_reason ?? finish;
  }
  assert.equal(finish, 'tool_calls');
  assert.deepEqual(new Set(deltas.map((d) => d.index)), new Set([0]));
  assert.equal(deltas[0].function.name, 'get_weather');
  assert.ok(deltas.slice(1).every((d) => d.id === undefined && d.function.name === undefined));
  const args = deltas.map((d) => d.function.arguments ?? '').join('');
  assert.deepEqual(JSON.parse(args), JSON.parse(call.function.arguments));
});

test('json_schema output follows the schema; a model without tool support refuses tools', async () => {
  const schema = {
    type: 'object',
    properties: { name: { type: 'string', maxLength: 30 }, legs: { type: 'integer', minimum: 0, maximum: 8 } },
    required: ['name', 'legs'],
    additionalProperties: false,
  };
  const reply = await client.chat.completions.create({
    model: qwen, messages: [{ role: 'user', content: 'Describe a spider.' }], temperature: 0, max_tokens: 80,
    response_format: { type: 'json_schema', json_schema: { name: 'animal', schema, strict: true } },
  });
  const value = JSON.parse(reply.choices[0].message.content);
  assert.deepEqual(Object.keys(value).sort(), ['legs', 'name']);
  assert.ok(Number.isInteger(value.legs) && value.legs >= 0 && value.legs <= 8);
  await assert.rejects(
    client.chat.completions.create({ model: smol, messages: paris, tools }),
    (e) => e instanceof BadRequestError && e.param === 'tools',
  );
});

test('logprobs and n', async () => {
  const reply = await client.chat.completions.create({
    model: smol, messages: [{ role: 'user', content: 'Name the capital of France.' }],
    temperature: 0, max_tokens: 6, logprobs: true, top_logprobs: 2, n: 2,
  });
  assert.deepEqual(reply.choices.map((c) => c.index), [0, 1]);
  for (const choice of reply.choices) {
    const content = choice.logprobs.content;
    assert.equal(content.map((t) => t.token).join(''), choice.message.content);
    for (const t of content) {
      assert.equal(t.top_logprobs.length, 2);
      assert.equal(t.top_logprobs[0].token, t.token);
    }
  }
});

// An agent's turn (docs/tools.md, "A turn"): the weather tool as openai-agents sends it.
const agentsWeather = {
  name: 'get_weather',
  description: 'Get the current weather in a city.',
  parameters: {
    properties: { city: { title: 'City', type: 'string' } },
    required: ['city'], title: 'get_weather_args', type: 'object', additionalProperties: false,
  },
};
const instructions = 'You answer questions about the weather.';
const question = 'What is the weather in Paris?';

test('an agent turn is one whole call: parallel_tool_calls false in chat, one item in Responses', async () => {
  // Greedy, the 0.5B writes this call as bare JSON and then echoes the schema as more JSON.
  const whole = await client.chat.completions.create({
    model: qwen, temperature: 0, tool_choice: 'auto', parallel_tool_calls: false,
    tools: [{ type: 'function', function: agentsWeather }],
    messages: [{ role: 'system', content: instructions }, { role: 'user', content: question }],
  });
  const choice = whole.choices[0];
  assert.equal(choice.finish_reason, 'tool_calls');
  assert.equal(choice.message.content, null);
  assert.deepEqual(choice.message.tool_calls.map((c) => JSON.parse(c.function.arguments)), [{ city: 'Paris' }]);

  const request = {
    model: qwen, temperature: 0, store: false, instructions, input: question,
    tools: [{ type: 'function', strict: true, ...agentsWeather }],
  };
  const response = await client.responses.create(request);
  assert.equal(response.output.length, 1, JSON.stringify(response.output));
  assert.equal(response.output[0].name, 'get_weather');
  const done = [];
  for await (const event of await client.responses.create({ ...request, stream: true })) {
    if (event.type === 'response.output_item.done') done.push(event.item);
  }
  assert.deepEqual(done.map((i) => [i.type, i.name, JSON.parse(i.arguments)]),
    [['function_call', 'get_weather', { city: 'Paris' }]]);
});
