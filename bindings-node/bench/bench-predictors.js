'use strict';
// What serving a JS function as a predictor costs per step, next to iterating the same
// generator directly (the anchor) in the same run: a generator yielding N small ints, pulled
// through `predictions.stream` and `chat.completions.create({ stream: true })` (a chunk per
// yield). Medians of BENCH_ROUNDS (default 5) interleaved rounds.
const { OpenAI, Parameter, predictor } = require('..');

const N = Number(process.env.BENCH_STEPS || 5000);
const ROUNDS = Number(process.env.BENCH_ROUNDS || 5);

function* numbers(n) { for (let i = 0; i < n; i++) yield i; }
const count = predictor({ tag: '@bench/count', inputs: [Parameter.Generic({ name: 'n', type: 'integer' })], outputs: [Parameter.Generic({ name: 'i', type: 'integer' })] },
  function* counting({ n }) { yield* numbers(n); });
const words = predictor({ tag: '@bench/words', inputs: [Parameter.ChatMessages({ name: 'messages' })] },
  function* saying() { for (let i = 0; i < N; i++) yield 'a'; });
const client = new OpenAI({ predictors: [count, words] });

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

async function direct() {
  const start = process.hrtime.bigint();
  for (const _ of numbers(N));
  return Number(process.hrtime.bigint() - start) / 1e9;
}

async function predictions() {
  const start = process.hrtime.bigint();
  let seen = 0;
  for await (const _ of client.predictions.stream({ tag: '@bench/count', inputs: { n: N } })) seen++;
  if (seen !== N) throw new Error(`${seen} predictions`);
  return Number(process.hrtime.bigint() - start) / 1e9;
}

async function chat() {
  const start = process.hrtime.bigint();
  let seen = 0;
  for await (const c of await client.chat.completions.create({ model: '@bench/words', messages: [{ role: 'user', content: 'x' }], stream: true })) {
    if (c.choices.length && c.choices[0].delta.content) seen++;
  }
  if (seen !== N) throw new Error(`${seen} chunks`);
  return Number(process.hrtime.bigint() - start) / 1e9;
}

(async () => {
  const times = { direct: [], 'predictions.stream': [], 'chat stream': [] };
  for (let r = 0; r < ROUNDS; r++) {
    times.direct.push(await direct());
    times['predictions.stream'].push(await predictions());
    times['chat stream'].push(await chat());
  }
  const anchor = median(times.direct) / N;
  console.log(`${N} steps, medians of ${ROUNDS} rounds`);
  for (const [name, values] of Object.entries(times)) {
    const perStep = median(values) / N;
    console.log(`${name.padEnd(20)} ${(perStep * 1e6).toFixed(2).padStart(8)} µs/step  (${(perStep / anchor).toFixed(1).padStart(7)}× the plain generator)`);
  }
})();
