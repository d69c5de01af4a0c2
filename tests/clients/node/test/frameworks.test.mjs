// `ingle serve` driven by the JavaScript frameworks people build on: the Vercel AI SDK (through
// @ai-sdk/openai-compatible, and @ai-sdk/openai, whose `openai(model)` speaks the Responses API),
// LangChain JS (@langchain/openai) and Codex CLI (@openai/codex, Responses only), pinned in
// package.json.
// scripts/test-clients starts the server and passes INGLE_SERVE_URL and INGLE_SERVE_KEY; each
// test's outcome is written to $INGLE_CLIENTS_JS_RESULTS for docs/clients.md.
import test, { after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { execFile } from 'node:child_process';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { createRequire } from 'node:module';
import { z } from 'zod';
import { embed, generateObject, generateText, stepCountIs, streamText, tool } from 'ai';
import { createOpenAI } from '@ai-sdk/openai';
import { createOpenAICompatible } from '@ai-sdk/openai-compatible';
import { ChatOpenAI, OpenAIEmbeddings } from '@langchain/openai';
import Anthropic from '@anthropic-ai/sdk';

globalThis.AI_SDK_LOG_WARNINGS = false; // the generateObject deprecation: the issue asks for it by name
const require = createRequire(import.meta.url);
// A package whose `exports` hide its package.json (@anthropic-ai/sdk) is read where npm put it.
const manifest = (name) => {
  try {
    return require.resolve(`${name}/package.json`);
  } catch {
    return join(import.meta.dirname, '..', 'node_modules', name, 'package.json');
  }
};
const version = (name) => JSON.parse(readFileSync(manifest(name), 'utf8')).version;

const baseURL = process.env.INGLE_SERVE_URL;
const apiKey = process.env.INGLE_SERVE_KEY;
const SMOL = '@local/smollm2-135m-instruct';
const QWEN = '@local/qwen2.5-coder-0.5b-instruct';
const MINILM = '@local/all-minilm-l6-v2';
const FRANCE = 'Name the capital of France.';
const PARIS_WEATHER = "What's the weather in Paris right now?";

const rows = [];
after(() => {
  if (process.env.INGLE_CLIENTS_JS_RESULTS) {
    writeFileSync(process.env.INGLE_CLIENTS_JS_RESULTS, JSON.stringify(rows, null, 1));
  }
});

// scripts/test-clients's tier: `ci` runs the first call of each package (one call per framework
// and integration), `extended` the others, unset all of them (docs/testing.md).
const TIER = process.env.INGLE_CLIENTS_TIER;
const packagesSeen = new Set();

/** A test that is also a row of docs/clients.md. */
function row(framework, pkg, call, fn) {
  const first = !packagesSeen.has(pkg);
  packagesSeen.add(pkg);
  if ((TIER === 'ci' && !first) || (TIER === 'extended' && first)) return;
  test(`${framework}: ${call}`, async () => {
    const entry = { framework, version: `${pkg} ${version(pkg)}`, call, result: 'pass' };
    rows.push(entry);
    try {
      await fn();
    } catch (e) {
      entry.result = 'fail';
      entry.note = String(e?.message ?? e).split('\n')[0].slice(0, 200);
      throw e;
    }
  });
}

// --- Anthropic SDK (the Messages API) -------------------------------------------------------

const anthropic = new Anthropic({ baseURL: baseURL.replace(/\/v1$/, ''), apiKey, maxRetries: 0 });
const WEATHER_TOOL = {
  name: 'get_weather', description: 'Get the current weather in a city.',
  input_schema: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
};

row('Anthropic SDK', '@anthropic-ai/sdk', '`messages.create`', async () => {
  const message = await anthropic.messages.create({
    model: SMOL, max_tokens: 16, temperature: 0, messages: [{ role: 'user', content: FRANCE }],
  });
  assert.equal(message.type, 'message');
  assert.match(message.content[0].text, /Paris/);
  assert.ok(message.usage.input_tokens > 0 && message.usage.output_tokens > 0);
});

row('Anthropic SDK', '@anthropic-ai/sdk', '`messages.stream` (`on("text")`, `finalMessage()`)', async () => {
  const pieces = [];
  const stream = anthropic.messages.stream({
    model: SMOL, max_tokens: 24, temperature: 0, system: 'Answer in a short sentence.',
    messages: [{ role: 'user', content: FRANCE }],
  }).on('text', (text) => pieces.push(text));
  const final = await stream.finalMessage();
  assert.ok(pieces.length > 1);
  assert.equal(pieces.join(''), final.content[0].text);
  assert.match(final.content[0].text, /Paris/);
});

row('Anthropic SDK', '@anthropic-ai/sdk', '`messages.create({ tools })` over two turns', async () => {
  const question = { role: 'user', content: PARIS_WEATHER };
  const first = await anthropic.messages.create({
    model: QWEN, max_tokens: 64, temperature: 0, tools: [WEATHER_TOOL], tool_choice: { type: 'any' },
    messages: [question],
  });
  assert.equal(first.stop_reason, 'tool_use');
  const call = first.content.find((b) => b.type === 'tool_use');
  assert.match(call.input.city, /Paris/i);
  const second = await anthropic.messages.create({
    model: QWEN, max_tokens: 48, temperature: 0, tools: [WEATHER_TOOL],
    messages: [question, { role: 'assistant', content: first.content }, {
      role: 'user', content: [
        { type: 'tool_result', tool_use_id: call.id, content: 'The weather in Paris is sunny, 21 degrees celsius.' },
        // Qwen 0.5B answers a bare tool result by calling again; asked, it answers.
        { type: 'text', text: 'Thanks. So, what is the weather in Paris? Answer in plain words.' },
      ],
    }],
  });
  const text = second.content.filter((b) => b.type === 'text').map((b) => b.text).join('').toLowerCase();
  assert.ok(text.includes('sunny') || text.includes('21'), text);
});

// --- Vercel AI SDK ------------------------------------------------------------------------

const ingle = createOpenAICompatible({
  name: 'ingle', baseURL, apiKey, includeUsage: true, supportsStructuredOutputs: true,
});
const AI = 'Vercel AI SDK';

row(AI, 'ai', 'generateText', async () => {
  const { text, usage } = await generateText({
    model: ingle.chatModel(SMOL), prompt: FRANCE, temperature: 0, maxOutputTokens: 16,
  });
  assert.match(text, /Paris/);
  assert.ok(usage.outputTokens > 0);
});

row(AI, 'ai', 'streamText', async () => {
  const result = streamText({ model: ingle.chatModel(SMOL), prompt: FRANCE, temperature: 0, maxOutputTokens: 16 });
  let text = '';
  for await (const part of result.textStream) text += part;
  assert.match(text, /Paris/);
  assert.equal(text, await result.text);
});

const weather = tool({
  description: 'Get the current weather in a city.',
  inputSchema: z.object({ city: z.string() }),
  execute: async ({ city }) => `18 degrees Celsius and sunny in ${city}`,
});

row(AI, 'ai', 'generateText with tools and stepCountIs(2): the call, its result, a second step', async () => {
  const result = await generateText({
    model: ingle.chatModel(QWEN), prompt: PARIS_WEATHER, temperature: 0, maxOutputTokens: 120,
    tools: { get_weather: weather }, stopWhen: stepCountIs(2),
  });
  const call = result.steps[0].toolCalls[0];
  assert.equal(call?.toolName, 'get_weather', JSON.stringify(result.steps[0].content));
  assert.match(call.input.city, /Paris/);
  assert.match(result.steps[0].toolResults[0].output, /18 degrees/);
  assert.equal(result.steps.length, 2);
});

row(AI, 'ai', 'streamText with tools', async () => {
  const result = streamText({
    model: ingle.chatModel(QWEN), prompt: PARIS_WEATHER, temperature: 0, maxOutputTokens: 80,
    tools: { get_weather: weather }, toolChoice: 'required',
  });
  const calls = [];
  for await (const part of result.fullStream) {
    if (part.type === 'tool-call') calls.push(part);
    if (part.type === 'error') throw part.error;
  }
  assert.equal(calls.length, 1, JSON.stringify(calls));
  assert.match(calls[0].input.city, /Paris/);
});

row(AI, 'ai', 'generateObject (json_schema)', async () => {
  const { object } = await generateObject({
    model: ingle.chatModel(QWEN), temperature: 0, maxOutputTokens: 80, prompt: 'Describe Lisbon.',
    schema: z.object({ name: z.string(), country: z.string(), population: z.number().int() }),
  });
  assert.equal(typeof object.name, 'string');
  assert.equal(typeof object.country, 'string');
  assert.ok(Number.isInteger(object.population));
});

row(AI, 'ai', 'embed', async () => {
  const { embedding } = await embed({ model: ingle.embeddingModel(MINILM), value: 'Paris' });
  assert.equal(embedding.length, 384);
});

// The `openai(...)` provider: its default models speak the Responses API (POST /v1/responses).
const openai = createOpenAI({ baseURL, apiKey });

row(AI, '@ai-sdk/openai', 'openai(model): generateText over the Responses API', async () => {
  const { text, usage, response } = await generateText({
    model: openai(SMOL), prompt: FRANCE, temperature: 0, maxOutputTokens: 16,
  });
  assert.match(text, /Paris/);
  assert.ok(usage.outputTokens > 0);
  assert.match(response.id, /^resp_/);
});

row(AI, '@ai-sdk/openai', 'openai(model): streamText over the Responses API', async () => {
  const result = streamText({ model: openai(SMOL), prompt: FRANCE, temperature: 0, maxOutputTokens: 16 });
  let text = '';
  for await (const part of result.textStream) text += part;
  assert.match(text, /Paris/);
  assert.equal(text, await result.text);
});

row(AI, '@ai-sdk/openai', 'openai(model): generateText with tools and stepCountIs(2) over the Responses API', async () => {
  const result = await generateText({
    model: openai(QWEN), prompt: PARIS_WEATHER, temperature: 0, maxOutputTokens: 120,
    tools: { get_weather: weather }, stopWhen: stepCountIs(2),
  });
  const call = result.steps[0].toolCalls[0];
  assert.equal(call?.toolName, 'get_weather', JSON.stringify(result.steps[0].content));
  assert.match(call.input.city, /Paris/);
  assert.match(result.steps[0].toolResults[0].output, /18 degrees/);
  assert.equal(result.steps.length, 2);
});

row(AI, '@ai-sdk/openai', 'openai(model): streamText with tools over the Responses API', async () => {
  const result = streamText({
    model: openai(QWEN), prompt: PARIS_WEATHER, temperature: 0, maxOutputTokens: 80,
    tools: { get_weather: weather }, toolChoice: 'required',
  });
  const calls = [];
  for await (const part of result.fullStream) {
    if (part.type === 'tool-call') calls.push(part);
    if (part.type === 'error') throw part.error;
  }
  assert.equal(calls.length, 1, JSON.stringify(calls));
  assert.match(calls[0].input.city, /Paris/);
});

// --- LangChain JS ---------------------------------------------------------------------------

const LC = 'LangChain JS';
const chat = (model, options = {}) =>
  new ChatOpenAI({ model, apiKey, configuration: { baseURL }, temperature: 0, maxRetries: 0, ...options });

row(LC, '@langchain/openai', 'ChatOpenAI.invoke', async () => {
  const reply = await chat(SMOL, { maxTokens: 16 }).invoke(FRANCE);
  assert.match(reply.content, /Paris/);
});

row(LC, '@langchain/openai', 'ChatOpenAI.stream', async () => {
  let text = '';
  for await (const chunk of await chat(SMOL, { maxTokens: 16 }).stream(FRANCE)) text += chunk.content;
  assert.match(text, /Paris/);
});

row(LC, '@langchain/openai', 'ChatOpenAI.batch', async () => {
  const replies = await chat(SMOL, { maxTokens: 16 }).batch([FRANCE, 'Name the capital of Italy.']);
  assert.equal(replies.length, 2);
  assert.match(replies[0].content, /Paris/);
});

const weatherSchema = z.object({ city: z.string().describe('The city') });

row(LC, '@langchain/openai', 'bindTools', async () => {
  const model = chat(QWEN, { maxTokens: 80 }).bindTools(
    [{ name: 'get_weather', description: 'Get the current weather in a city.', schema: weatherSchema }],
    { tool_choice: 'required' },
  );
  const reply = await model.invoke(PARIS_WEATHER);
  assert.equal(reply.tool_calls[0]?.name, 'get_weather', JSON.stringify(reply));
  assert.match(reply.tool_calls[0].args.city, /Paris/);
});

row(LC, '@langchain/openai', 'bindTools, streamed', async () => {
  const model = chat(QWEN, { maxTokens: 80 }).bindTools(
    [{ name: 'get_weather', description: 'Get the current weather in a city.', schema: weatherSchema }],
    { tool_choice: 'required' },
  );
  let whole;
  for await (const chunk of await model.stream(PARIS_WEATHER)) whole = whole ? whole.concat(chunk) : chunk;
  assert.equal(whole.tool_calls[0]?.name, 'get_weather', JSON.stringify(whole.tool_call_chunks));
  assert.match(whole.tool_calls[0].args.city, /Paris/);
});

const city = z.object({ name: z.string(), country: z.string() });
for (const method of ['jsonSchema', 'functionCalling']) {
  row(LC, '@langchain/openai', `withStructuredOutput (${method})`, async () => {
    const model = chat(QWEN, { maxTokens: 80 }).withStructuredOutput(city, { method, name: 'city' });
    const value = await model.invoke('Describe Lisbon.');
    assert.equal(typeof value.name, 'string');
    assert.equal(typeof value.country, 'string');
  });
}

row(LC, '@langchain/openai', 'OpenAIEmbeddings', async () => {
  const embeddings = new OpenAIEmbeddings({ model: MINILM, apiKey, configuration: { baseURL }, maxRetries: 0 });
  const [one, two] = await embeddings.embedDocuments(['Paris', 'Lisbon']);
  assert.equal(one.length, 384);
  assert.equal((await embeddings.embedQuery('Paris')).length, 384);
  assert.notDeepEqual(one, two);
});

// --- Codex CLI ---------------------------------------------------------------------------
// `codex exec` with ingle as a custom Responses provider (its own config dir, no login). What
// Codex sends that a local model has no use for is switched off by its own settings: its 17 KB
// system prompt (model_instructions_file), the web_search tool, goals, sub-agents, image
// generation, tool suggestions, apps and plugins; what is left is four function tools, its
// developer and environment messages, `reasoning: {}`, `include: ["reasoning.encrypted_content"]`,
// `store: false`, `prompt_cache_key` and `client_metadata`, all of which ingle accepts.

row('Codex CLI', '@openai/codex', 'codex exec, a custom Responses provider: one turn', async () => {
  const home = mkdtempSync(join(tmpdir(), 'ingle-codex-'));
  try {
    writeFileSync(join(home, 'instructions.txt'), 'You are a coding assistant. Answer briefly.\n');
    writeFileSync(join(home, 'config.toml'), [
      `model = "${QWEN}"`,
      'model_provider = "ingle"',
      'approval_policy = "never"',
      'sandbox_mode = "read-only"',
      `model_instructions_file = "${join(home, 'instructions.txt')}"`,
      'model_reasoning_summary = "none"',
      'web_search = "disabled"',
      '[model_providers.ingle]',
      'name = "ingle"',
      `base_url = "${baseURL}"`,
      'env_key = "INGLE_SERVE_KEY"',
      'wire_api = "responses"',
      'stream_max_retries = 0',
      'request_max_retries = 0',
    ].join('\n'));
    const codex = require.resolve('@openai/codex/bin/codex.js');
    const features = ['goals', 'multi_agent', 'image_generation', 'tool_suggest', 'apps', 'plugins'];
    const run = promisify(execFile)(process.execPath, [
      codex, 'exec', '--skip-git-repo-check', '--ephemeral', '--cd', home,
      ...features.flatMap((f) => ['--disable', f]),
      '-o', join(home, 'last.txt'), 'Say hello in one short sentence.',
    ], { env: { ...process.env, CODEX_HOME: home, OPENAI_API_KEY: '' }, timeout: 240_000 });
    run.child.stdin.end(); // else codex waits for more of the prompt on stdin
    const { stdout } = await run;
    const last = readFileSync(join(home, 'last.txt'), 'utf8').trim();
    assert.ok(last.length > 0, `codex printed: ${stdout}`);
    assert.match(last, /hello|hi\b|help/i);
  } finally {
    rmSync(home, { recursive: true, force: true });
  }
});

// --- Claude Code ------------------------------------------------------------------------------
// `claude -p` with ANTHROPIC_BASE_URL at ingle serve (its own home dir, no login). Its own
// system prompt and tool set (about 20,000 tokens) are more than a small model's context, so its
// own flags shrink them: `--bare`, `--system-prompt`, `--tools Read`,
// `--exclude-dynamic-system-prompt-sections`, and CLAUDE_CODE_MAX_OUTPUT_TOKENS (it asks for
// 32,000 by default). What it sends beside, ingle accepts: `thinking: {type: "adaptive"}`,
// `context_management` clearing thinking, `output_config.effort`, `cache_control`, metadata,
// `?beta=true`.

function claude(home, prompt, ...flags) {
  const bin = join(import.meta.dirname, '..', 'node_modules', '@anthropic-ai', 'claude-code', 'bin', 'claude.exe');
  const run = promisify(execFile)(bin, [
    '--bare', '-p', prompt, ...flags, '--model', QWEN, '--tools', 'Read',
    '--system-prompt', 'You are a helpful coding assistant. Use tools when asked. Be brief.',
    '--exclude-dynamic-system-prompt-sections',
  ], {
    cwd: home,
    timeout: 240_000,
    env: {
      ...process.env,
      HOME: home,
      ANTHROPIC_BASE_URL: baseURL.replace(/\/v1$/, ''),
      ANTHROPIC_API_KEY: apiKey,
      CLAUDE_CODE_MAX_OUTPUT_TOKENS: '256',
      CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1',
      DISABLE_TELEMETRY: '1',
      DISABLE_AUTOUPDATER: '1',
    },
  });
  run.child.stdin.end();
  return run;
}

row('Claude Code', '@anthropic-ai/claude-code', 'claude -p, ANTHROPIC_BASE_URL at ingle: one turn, then a Read tool call', async () => {
  const home = mkdtempSync(join(tmpdir(), 'ingle-claude-'));
  try {
    const { stdout } = await claude(home, 'Reply with the single word: hello');
    assert.match(stdout, /hello/i);
    writeFileSync(join(home, 'notes.txt'), 'The secret word is pineapple.\n');
    // The agent loop through ingle: the model calls Read, Claude Code runs it and sends the
    // result back, the model answers. (Whether a 0.5B model then reads the right lines varies
    // with sampling, which Claude Code leaves at its default: not asserted.)
    const read = await claude(home, `Read the file ${join(home, 'notes.txt')} with the Read tool, then tell me the secret word.`,
      '--output-format', 'stream-json', '--verbose');
    const events = read.stdout.trim().split('\n').map((line) => JSON.parse(line));
    const blocks = (type) => events.filter((e) => e.type === type).flatMap((e) => e.message.content);
    assert.ok(blocks('assistant').some((b) => b.type === 'tool_use' && b.name === 'Read'), read.stdout);
    assert.ok(blocks('user').some((b) => b.type === 'tool_result'), read.stdout);
    assert.equal(events.at(-1).type, 'result');
    assert.equal(events.at(-1).subtype, 'success', read.stdout);
  } finally {
    rmSync(home, { recursive: true, force: true });
  }
});
