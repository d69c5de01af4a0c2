'use strict';
// Models by Hugging Face reference from Node: a local stand-in for the Hub (tests/hub/standin.py,
// checked against huggingface_hub by tests/hub/test_standin.py) serving the real default GGUF;
// client.models.pull(REF) with progress into a Hub cache of the test's own, then chat by
// reference and by REPO:QUANT, a config object naming it, and the errors a user meets.
const test = require('node:test');
const assert = require('node:assert/strict');
const { spawn } = require('node:child_process');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const readline = require('node:readline');
const { OpenAI, BadRequestError, NotFoundError } = require('..');

const cache = process.env.INGLE_MODELS_DIR ||
  path.join(process.env.XDG_CACHE_HOME || path.join(os.homedir(), '.cache'), 'ingle', 'models');
const repo = 'ingle-test/SmolLM2-135M-Instruct-GGUF';
const ask = {
  messages: [{ role: 'user', content: 'Name the capital of France.' }],
  temperature: 0,
  max_tokens: 8,
};

test('a Hugging Face reference pulls with progress and serves in Node', async (t) => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ingle-node-hub-'));
  const repoDir = path.join(dir, 'repos', repo);
  fs.mkdirSync(repoDir, { recursive: true });
  fs.symlinkSync(path.join(cache, 'SmolLM2-135M-Instruct.Q4_1.gguf'), path.join(repoDir, 'SmolLM2-135M-Instruct.Q4_1.gguf'));
  const standin = spawn('python3', [path.join(__dirname, '../../tests/hub/standin.py'), '--repos', path.join(dir, 'repos')], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const saved = { ...process.env };
  t.after(() => {
    standin.kill();
    for (const name of ['HF_ENDPOINT', 'HF_HUB_CACHE', 'HF_HOME']) {
      if (saved[name] === undefined) delete process.env[name];
      else process.env[name] = saved[name];
    }
    fs.rmSync(dir, { recursive: true, force: true });
  });
  const [line] = await readline.createInterface({ input: standin.stdout })[Symbol.asyncIterator]().next().then((r) => [r.value]);
  const urls = JSON.parse(line);
  process.env.HF_ENDPOINT = urls.hub;
  process.env.HF_HUB_CACHE = path.join(dir, 'hub');
  process.env.HF_HOME = path.join(dir, 'home');
  delete process.env.HF_TOKEN;
  delete process.env.HF_HUB_OFFLINE;

  const client = new OpenAI();
  // Not pulled yet: the error names the call that fixes it.
  await assert.rejects(client.chat.completions.create({ model: `hf.co/${repo}`, ...ask }), (err) => {
    assert.ok(err instanceof NotFoundError, String(err));
    assert.match(err.message, /await client\.models\.pull\("hf\.co\/ingle-test\/SmolLM2-135M-Instruct-GGUF"\)/);
    return true;
  });
  const events = [];
  const result = await client.models.pull(`hf.co/${repo}`, { onProgress: (e) => events.push(e) });
  assert.equal(result.tag, `hf.co/${repo}:Q4_1`);
  assert.equal(result.models_dir, path.join(dir, 'hub'));
  assert.deepEqual(result.notes, []);
  assert.ok(events.some((e) => e.status === 'downloading' && e.completed > 0));
  assert.equal(events.at(-1).status, 'success');

  const answer = (await client.chat.completions.create({ model: `hf.co/${repo}:q4_1`, ...ask })).choices[0].message.content;
  assert.match(answer, /Paris/);
  const short = await client.chat.completions.create({ model: 'SmolLM2-135M-Instruct-GGUF:Q4_1', ...ask });
  assert.equal(short.choices[0].message.content, answer);
  const ids = [];
  for await (const m of client.models.list()) ids.push(m.id);
  assert.ok(ids.includes(`hf.co/${repo}:Q4_1`), ids.join(', '));

  // The config as an object, naming the cached model by reference with options of its own.
  const mine = new OpenAI({
    config: { builtin_models: false, predictors: [{ tag: '@me/chat', backend: 'llama', model: `hf.co/${repo}:Q4_1`, n_ctx: 512 }] },
  });
  assert.equal((await mine.chat.completions.create({ model: 'chat', ...ask })).choices[0].message.content, answer);
  // And as TOML text.
  const toml = new OpenAI({ config: `[[predictors]]\ntag = "@me/toml"\nbackend = "llama"\nmodel = "hf.co/${repo}:Q4_1"\n` });
  assert.equal((await toml.chat.completions.create({ model: '@me/toml', ...ask })).choices[0].message.content, answer);

  await assert.rejects(client.models.pull(`hf.co/${repo}:Q8_0`), (err) => {
    assert.ok(err instanceof NotFoundError, String(err));
    assert.match(err.message, /its quants are: Q4_1/);
    return true;
  });
  await assert.rejects(client.models.pull('hf.co/ingle-test/re po'), (err) => {
    assert.ok(err instanceof BadRequestError, String(err));
    assert.equal(err.param, 'model');
    return true;
  });
});
