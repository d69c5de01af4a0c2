'use strict';
// Streamed chat through the Node package vs the Rust core: decode tokens/s and time to first
// token, same model, prompt and settings as core/examples/bench_chat.rs. Figures, not a test.
const { execFileSync } = require('node:child_process');
const path = require('node:path');
const { OpenAI } = require('..');

const model = '@local/smollm2-135m-instruct';
const TOKENS = 128;
const RUNS = 3;
const context = ('The Loire is the longest river in France. It flows through Orléans, Tours and Nantes. ' +
  'Its valley is known for its castles, vineyards and gardens. ').repeat(6);
const messages = [{ role: 'user', content: context + '\nWrite a long, detailed essay about the Loire valley and its history.' }];

async function measure(client) {
  const start = performance.now();
  let first = null;
  let pieces = 0;
  const stream = await client.chat.completions.create({ model, messages, max_tokens: TOKENS, temperature: 0, stream: true });
  for await (const chunk of stream) {
    if (chunk.choices[0]?.delta?.content) {
      pieces++;
      if (first === null) first = performance.now();
    }
  }
  const end = performance.now();
  return { ttft: first - start, tps: (pieces - 1) / ((end - first) / 1000) };
}

const median = (xs) => xs.slice().sort((a, b) => a - b)[Math.floor(xs.length / 2)];

(async () => {
  const client = new OpenAI();
  await measure(client); // warm-up: load the model
  const runs = [];
  for (let i = 0; i < RUNS; i++) runs.push(await measure(client));
  const node = { tps: median(runs.map((r) => r.tps)), ttft: median(runs.map((r) => r.ttft)) };
  const core = JSON.parse(execFileSync('cargo', ['run', '--release', '--locked', '-q', '-p', 'ingle-core',
    '--example', 'bench_chat', '--', '--core-json'], { cwd: path.join(__dirname, '..', '..') }));
  console.log(`model ${model}, ${TOKENS} tokens greedy, median of ${RUNS}`);
  console.log(`${''.padEnd(22)}${'decode tok/s'.padStart(14)}${'TTFT ms'.padStart(10)}${'tok/s vs core'.padStart(15)}`);
  for (const [name, tps, ttft] of [['ingle (Node)', node.tps, node.ttft], ['ingle (Rust core)', core.decode_tps, core.ttft_ms]]) {
    console.log(`${name.padEnd(22)}${tps.toFixed(1).padStart(14)}${ttft.toFixed(1).padStart(10)}${(tps / core.decode_tps).toFixed(2).padStart(15)}`);
  }
})();
