'use strict';
// Runtime CPU dispatch, the prompt cache and unloading, through the Node package.
const test = require('node:test');
const assert = require('node:assert/strict');
const ingle = require('..');
const { OpenAI, NotFoundError } = ingle;

const model = '@local/smollm2-135m-instruct';
// Eight notes (about 250 tokens): enough for the cache to matter. That a history longer than
// one 512-token batch answers as a cold model does is tests/tests/prompt_cache.rs's; here, that
// the package carries the cached tokens through.
let notes = "You are a helpful assistant. These are the notes of this week's planning meeting.\n";
for (let i = 1; i <= 8; i++) {
  notes += `Note ${i}: the team reviewed task ${i} of the release plan, assigned it to group ${(i % 5) + 1} `
    + `and agreed to report on it by day ${(i % 7) + 1}.\n`;
}
const greedy = (client, messages) => client.chat.completions.create({ model, messages, max_tokens: 32, temperature: 0 });

test('systemInfo names the best CPU variant of this machine', () => {
  const info = ingle.systemInfo();
  assert.equal(info.version, ingle.version);
  const scores = info.cpu_variants;
  assert.equal(scores[info.cpu_variant], Math.max(...Object.values(scores)));
  assert.ok(scores[info.cpu_variant] > 0);
  assert.ok(info.cpu_backend_path.endsWith(`libggml-cpu-${info.cpu_variant}.so`));
});

test('a follow-up reuses the history and answers as a cold client', async () => {
  const warm = new OpenAI();
  const first = [{ role: 'system', content: notes }, { role: 'user', content: 'Who has task 3?' }];
  const turn1 = await greedy(warm, first);
  const follow = [...first, { role: 'assistant', content: turn1.choices[0].message.content },
    { role: 'user', content: 'And task 7?' }];
  const turn2 = await greedy(warm, follow);
  assert.equal(turn2.usage.prompt_tokens_details.cached_tokens, turn1.usage.prompt_tokens);
  const cold = await greedy(new OpenAI(), follow);
  assert.equal(cold.usage.prompt_tokens_details.cached_tokens, 0);
  assert.equal(turn2.choices[0].message.content, cold.choices[0].message.content);
});

test('unload frees the model and the next request reloads it', async () => {
  const client = new OpenAI();
  const messages = [{ role: 'user', content: 'Name the capital of France.' }];
  const before = (await greedy(client, messages)).choices[0].message.content;
  assert.equal(await client.models.isLoaded(model), true);
  assert.equal(await client.models.unload(model), true);
  assert.equal(await client.models.isLoaded(model), false);
  assert.equal(await client.models.unload(model), false);
  assert.equal((await greedy(client, messages)).choices[0].message.content, before);
  await assert.rejects(client.models.unload('@nobody/nothing'), NotFoundError);
  await assert.rejects(client.models.unload(3), /model/);
});
