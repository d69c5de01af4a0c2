'use strict';
// client.models.pull: the real default model pulled from a local mirror (an HTTP server on
// 127.0.0.1 serving the models cache, with range requests) into an empty models directory, with
// progress, then served by the same client; an abort, resumed by the next pull; bad arguments.
const test = require('node:test');
const assert = require('node:assert/strict');
const crypto = require('node:crypto');
const fs = require('node:fs');
const http = require('node:http');
const os = require('node:os');
const path = require('node:path');
const { OpenAI, BadRequestError, NotFoundError, OpenAIError, APIUserAbortError } = require('..');

const model = '@local/smollm2-135m-instruct';
const gguf = 'SmolLM2-135M-Instruct.Q4_1.gguf';
const cache = process.env.INGLE_MODELS_DIR ||
  path.join(process.env.XDG_CACHE_HOME || path.join(os.homedir(), '.cache'), 'ingle', 'models');
const bytes = fs.readFileSync(path.join(cache, gguf));
const ranges = [];

// The mirror: the file, whole or from `bytes=N-`, sent in slices so a download takes a while.
const server = http.createServer((req, res) => {
  const range = /^bytes=(\d+)-$/.exec(req.headers.range || '');
  ranges.push(req.headers.range || null);
  const start = range ? Number(range[1]) : 0;
  const headers = { 'Content-Length': bytes.length - start, 'Accept-Ranges': 'bytes' };
  if (range) headers['Content-Range'] = `bytes ${start}-${bytes.length - 1}/${bytes.length}`;
  res.writeHead(range ? 206 : 200, headers);
  let at = start;
  const next = () => {
    if (at >= bytes.length) return res.end();
    const end = Math.min(at + (4 << 20), bytes.length);
    const more = res.write(bytes.subarray(at, end));
    at = end;
    if (more) setImmediate(next);
    else res.once('drain', next);
  };
  res.on('error', () => {});
  next();
});

let dir;
test.before(async () => {
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ingle-pull-'));
  const url = `http://127.0.0.1:${server.address().port}`;
  const catalog = path.join(dir, 'catalog.toml');
  fs.writeFileSync(catalog, [
    'schema = 1', `index = "${url}/simple/"`,
    '[[model]]', `tag = "${model}"`, 'kind = "chat"', 'licence = "Apache-2.0"',
    '[[model.file]]', `path = "${gguf}"`, `size = ${bytes.length}`,
    `sha256 = "${crypto.createHash('sha256').update(bytes).digest('hex')}"`,
    '[[model.file.part]]', `url = "${url}/${gguf}"`, '',
  ].join('\n'));
  process.env.INGLE_CATALOG = catalog;
});
test.after(() => {
  server.close();
  delete process.env.INGLE_CATALOG;
  fs.rmSync(dir, { recursive: true, force: true });
});

test('pull into an empty models dir, with progress, then chat', async () => {
  const models = path.join(dir, 'models');
  const client = new OpenAI({ modelsDir: models });
  await assert.rejects(client.chat.completions.create({ model, messages: [{ role: 'user', content: 'Hi' }] }),
    (e) => e.message.includes(`ingle pull ${model}`) && e.message.includes('client.models.pull('));

  const events = [];
  const result = await client.models.pull(model, { onProgress: (e) => events.push(e) });
  assert.equal(result.tag, model);
  assert.deepEqual(result.files.map((f) => [f.path, f.fetched]), [[gguf, true]]);
  assert.equal(fs.statSync(path.join(models, gguf)).size, bytes.length);
  const downloading = events.filter((e) => e.status === 'downloading');
  assert.ok(downloading.length > 10, `${events.length} events`);
  assert.equal(downloading.at(-1).completed, bytes.length);
  assert.equal(events.at(-1).status, 'success');

  const answer = await client.chat.completions.create({
    model, messages: [{ role: 'user', content: 'Name the capital of France.' }], max_tokens: 12, temperature: 0,
  });
  assert.match(answer.choices[0].message.content, /Paris/);
  const again = await client.models.pull(model);
  assert.equal(again.downloaded_bytes, 0);
});

test('an aborted pull rejects and the next one resumes', async () => {
  const models = path.join(dir, 'resume');
  const client = new OpenAI({ modelsDir: models });
  const controller = new AbortController();
  let aborted = false;
  const onProgress = (e) => {
    if (!aborted && e.status === 'downloading' && e.completed > 20e6) {
      aborted = true;
      controller.abort();
    }
  };
  await assert.rejects(client.models.pull(model, { onProgress, signal: controller.signal }), APIUserAbortError);
  assert.ok(!fs.existsSync(path.join(models, gguf)));
  // Let the native pull notice the abort and stop.
  await new Promise((r) => setTimeout(r, 500));
  ranges.length = 0;
  const result = await client.models.pull(model);
  assert.ok(result.files[0].fetched);
  assert.ok(result.downloaded_bytes < bytes.length, `${result.downloaded_bytes}`);
  assert.ok(ranges.some((r) => r && r.startsWith('bytes=')), JSON.stringify(ranges));
  assert.equal(fs.statSync(path.join(models, gguf)).size, bytes.length);
});

test('an onProgress that throws stops the pull, which rejects with its error', async () => {
  const models = path.join(dir, 'throwing');
  const client = new OpenAI({ modelsDir: models });
  const boom = new Error('stop here');
  let calls = 0;
  const onProgress = (e) => {
    calls += 1;
    if (e.status === 'downloading' && e.completed > 10e6) throw boom;
  };
  await assert.rejects(client.models.pull(model, { onProgress }), (e) => e === boom);
  const after = calls;
  await new Promise((r) => setTimeout(r, 300));
  assert.equal(calls, after, 'no event after the throw');
  assert.ok(!fs.existsSync(path.join(models, gguf)));
  // Nothing lost: the same client resumes and finishes it.
  const result = await client.models.pull(model);
  assert.ok(result.downloaded_bytes < bytes.length, `${result.downloaded_bytes}`);
  assert.equal(fs.statSync(path.join(models, gguf)).size, bytes.length);
});

test('bad arguments and unknown tags', async () => {
  const client = new OpenAI({ modelsDir: path.join(dir, 'bad') });
  await assert.rejects(client.models.pull('@local/nope'), (e) => e instanceof NotFoundError && e.message.includes(model));
  await assert.rejects(client.models.pull(3), BadRequestError);
  await assert.rejects(client.models.pull(model, { onProgress: 'no' }), OpenAIError);
});

test('the ingle command of the package', async () => {
  // Run asynchronously: the mirror is served by this process's event loop.
  const { promisify } = require('node:util');
  const execFile = promisify(require('node:child_process').execFile);
  const env = { ...process.env, INGLE_MODELS_DIR: path.join(dir, 'cli') };
  const run = async (...args) =>
    (await execFile(process.execPath, [path.join(__dirname, '..', 'cli.js'), ...args], { env })).stdout;
  assert.match(await run('models'), new RegExp(`not downloaded: ingle pull ${model}`));
  assert.match(await run('pull', model), new RegExp(`^pulled ${model}: 98\\.4 MB \\(98\\.4 MB downloaded\\), verified`));
  const listed = JSON.parse(await run('models', '--json'));
  assert.equal(listed.models[0].cached, true);
  assert.equal(listed.models_dir, env.INGLE_MODELS_DIR);
  // The same command as the binary: its verbs, and clap's usage errors (status 2).
  assert.match(await run('--help'), /serve/);
  await assert.rejects(run('pull', '--no-such-flag'), (e) => e.code === 2 && /--no-such-flag/.test(e.stderr));
  await assert.rejects(run('pull', '@local/nope'), (e) => e.code === 1 && /^ingle: error: /.test(e.stderr));
});

for (const signal of ['SIGTERM', 'SIGINT']) {
  test(`npx ingle serve stops on ${signal} as the binary does (drained, status 0)`, async () => {
    const { spawn } = require('node:child_process');
    const env = { ...process.env, INGLE_MODELS_DIR: path.join(dir, 'serve') };
    const server = spawn(process.execPath, [path.join(__dirname, '..', 'cli.js'), 'serve', '--port', '0'],
      { env, stdio: ['ignore', 'ignore', 'pipe'] });
    try {
      await new Promise((resolve, reject) => {
        let seen = '';
        const timer = setTimeout(() => reject(new Error(`not serving after 60 s: ${seen}`)), 60_000);
        timer.unref();
        server.stderr.on('data', (chunk) => {
          seen += chunk;
          if (seen.includes('serving the OpenAI API on')) {
            clearTimeout(timer);
            resolve();
          }
        });
        server.on('exit', (code) => reject(new Error(`ended (${code}) before serving: ${seen}`)));
      });
      const exited = new Promise((resolve) => server.on('exit', (code, sig) => resolve([code, sig])));
      server.kill(signal);
      const timeout = new Promise((resolve) => setTimeout(() => resolve(['timeout']), 10_000).unref());
      assert.deepEqual(await Promise.race([exited, timeout]), [0, null]);
    } finally {
      server.kill('SIGKILL');
    }
  });
}
