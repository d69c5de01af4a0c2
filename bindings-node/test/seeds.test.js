'use strict';
// The predictors of the documents ingle was started from (Muna's guides), declared in
// JavaScript: the texts of an embedding predictor found by their place (the one required array
// of strings, annotated Generic), speech audio channels first or frames first as its shape
// decides, and Muna's annotation names (`beta.Annotations`).
const test = require('node:test');
const assert = require('node:assert/strict');
const { OpenAI, Parameter, beta, predictor, PredictorDefinitionError, BadRequestError, InternalServerError } = require('..');

const { Annotations } = beta;
const RATE = 24000;
const FRAMES = RATE / 10;

function rows(texts, dims) {
  return texts.map((t) => new Float32Array(dims).map((_, i) => Math.sin(t.length + i)));
}

// Seed 000, "Creating Embedding Predictors", step 3: texts annotated Generic.
const embedText = predictor({
  tag: '@seed/embed-text',
  inputs: [
    Parameter.Generic({ name: 'texts', type: 'array', items: 'string', description: 'Input texts to embed.' }),
    Parameter.EmbeddingDims({ name: 'dimensions', description: 'The number of dimensions the embeddings should have.', min: 256, max: 768, default: 768 }),
  ],
  outputs: [Parameter.Embedding({ name: 'embeddings', description: 'Embedding matrix.' })],
}, ({ texts, dimensions }) => rows(texts, dimensions));

// An array whose items are not declared is a list of strings too.
const embedPlain = predictor({
  tag: '@seed/embed-plain',
  inputs: [Parameter.Generic({ name: 'texts', type: 'array' })],
  outputs: [Parameter.Embedding({ name: 'embeddings' })],
}, ({ texts }) => rows(texts, 4));

/** Audio of `shape`, its samples numbered (mod 7, over 10) in memory order. */
function shaped(shape) {
  return new Float32Array(shape.reduce((a, b) => a * b, 1)).map((_, i) => (i % 7) / 10);
}
const LAYOUTS = {
  mono: () => shaped([FRAMES]),
  frames_first: () => ({ data: shaped([FRAMES, 2]), shape: [FRAMES, 2] }), // seed 001: (F, C)
  channels_first: () => ({ data: shaped([2, FRAMES]), shape: [2, FRAMES] }), // seed 000: (C, F)
  channel_rows: () => [shaped([FRAMES]), shaped([FRAMES]).map((x) => -x)], // (C, F) as rows
  square: () => ({ data: shaped([2, 2]), shape: [2, 2] }),
  wide: () => ({ data: shaped([100, 200]), shape: [100, 200] }),
};

// Seed 000, "Creating Speech Predictors", step 4, with the voice picking the layout.
const generateSpeech = predictor({
  tag: '@seed/generate-speech',
  inputs: [
    Parameter.Generic({ name: 'text', type: 'string', description: 'Input text.' }),
    Parameter.AudioVoice({ name: 'voice', description: 'Voice to use in generating audio.', voices: Object.keys(LAYOUTS) }),
    Parameter.AudioSpeed({ name: 'speed', description: 'The speed of the generated audio.', min: 0.25, max: 4.0, default: 1.0 }),
  ],
  outputs: [Parameter.Audio({ name: 'audio', description: 'Generated speech.', sample_rate: RATE })],
}, ({ voice }) => LAYOUTS[voice]());

// Muna's annotation names.
const seen = {};
const chat = predictor({
  tag: '@beta/chat',
  inputs: [
    Parameter.ChatMessages({ name: 'messages', description: 'Messages comprising the chat conversation so far.' }),
    Annotations.ResponseFormat({ name: 'response_format', required: false }),
    Annotations.MaxOutputTokens({ name: 'max_output_tokens', default: 5000 }),
    Annotations.SamplingTemperature({ name: 'temperature', min: 0, max: 2, default: 1 }),
    Annotations.SamplingProbability({ name: 'top_p', min: 0, max: 1, default: 1 }),
    Annotations.PresencePenalty({ name: 'presence_penalty', min: 0, max: 2, default: 0 }),
    Annotations.FrequencyPenalty({ name: 'frequency_penalty', min: 0, max: 2, default: 0 }),
  ],
}, function* answer({ messages, ...options }) {
  seen.chat = options;
  yield messages.at(-1).content;
});
const embedBeta = predictor({
  tag: '@beta/embeddings',
  inputs: [
    Parameter.Generic({ name: 'texts', type: 'array', items: 'string' }),
    Annotations.EmbeddingDims({ name: 'dimensions', default: 16 }), // no max: the default is
  ],
  outputs: [Parameter.Embedding({ name: 'embeddings' })],
}, ({ texts, dimensions }) => rows(texts, dimensions));
const kokoro = predictor({
  tag: '@beta/kokoro',
  inputs: [
    Parameter.Generic({ name: 'text', type: 'string' }),
    Annotations.AudioVoice({ name: 'voice', voices: ['af', 'bm_lewis'] }),
    Annotations.AudioSpeed({ name: 'speed', min: 0.5, max: 2, default: 1 }),
  ],
  outputs: [Parameter.Audio({ name: 'audio', sample_rate: RATE })],
}, ({ voice, speed }) => {
  seen.speech = { voice, speed };
  return new Float32Array(FRAMES / speed);
});

const client = new OpenAI({ predictors: [embedText, embedPlain, generateSpeech, chat, embedBeta, kokoro] });

async function pcm(voice) {
  const r = await client.audio.speech.create({ model: '@seed/generate-speech', voice, input: 'x', response_format: 'pcm' });
  return new Int16Array(await r.arrayBuffer());
}

async function raw(voice) {
  const p = await client.predictions.create({ tag: '@seed/generate-speech', inputs: { text: 'x', voice } });
  if (p.error) return p.error.message;
  const bytes = Buffer.from(p.results[0].data, 'base64');
  return { channels: p.results[0].channels, samples: new Float32Array(bytes.buffer, bytes.byteOffset, bytes.length / 4) };
}

test("the seed's embedding predictor: texts found by their place", async () => {
  const r = await client.embeddings.create({ model: '@seed/embed-text', input: ['alpha', 'b'] });
  assert.deepEqual(r.data.map((d) => d.embedding.length), [768, 768]);
  const short = await client.embeddings.create({ model: '@seed/embed-text', input: 'alpha', dimensions: 256 });
  assert.equal(short.data[0].embedding.length, 256);
  await assert.rejects(client.embeddings.create({ model: '@seed/embed-text', input: 'a', dimensions: 100 }),
    (e) => e instanceof BadRequestError && e.param === 'dimensions' && e.message.includes('between 256 and 768'));
  await assert.rejects(client.embeddings.create({ model: '@seed/embed-text', input: ['a', 1] }), (e) => e.param === 'input[1]');
  assert.equal((await client.embeddings.create({ model: '@seed/embed-plain', input: 'a' })).data[0].embedding.length, 4);
  // Two required arrays of strings: which are the texts? Refused, naming the second.
  assert.throws(() => predictor({
    tag: '@seed/two',
    inputs: [Parameter.Generic({ name: 'texts', type: 'array', items: 'string' }), Parameter.Generic({ name: 'more', type: 'array', items: 'string' })],
    outputs: [Parameter.Embedding({ name: 'e' })],
  }, () => []), (e) => e instanceof PredictorDefinitionError && e.param === 'more' && e.message.includes('`texts` and `more`'));
});

test('speech audio is [frames, channels] or [channels, frames] as its shape decides', async () => {
  assert.deepEqual(await raw('mono'), { channels: 1, samples: shaped([FRAMES]) });
  assert.deepEqual(await raw('frames_first'), { channels: 2, samples: shaped([FRAMES, 2]) });
  const interleaved = new Float32Array(2 * FRAMES);
  const planar = shaped([2, FRAMES]);
  for (let f = 0; f < FRAMES; f += 1) for (let c = 0; c < 2; c += 1) interleaved[2 * f + c] = planar[c * FRAMES + f];
  assert.deepEqual(await raw('channels_first'), { channels: 2, samples: interleaved });
  const rowsOut = await raw('channel_rows');
  assert.equal(rowsOut.channels, 2);
  assert.deepEqual([rowsOut.samples[2], rowsOut.samples[3]], [shaped([FRAMES])[1], -shaped([FRAMES])[1]]);
  // Encoded as mono: one 16-bit sample a frame, whichever the layout.
  for (const voice of ['mono', 'frames_first', 'channels_first', 'channel_rows']) assert.equal((await pcm(voice)).length, FRAMES, voice);
  for (const [voice, words] of [['square', '[2, 2], which is ambiguous'], ['wide', 'more than 64 channels']]) {
    await assert.rejects(pcm(voice), (e) => {
      assert.ok(e instanceof InternalServerError, String(e));
      assert.ok(e.message.includes('`@seed/generate-speech`') && e.message.includes('the output `audio`'), e.message);
      assert.ok(e.message.includes(words), e.message);
      return true;
    });
    assert.ok((await raw(voice)).includes(words));
  }
});

test("beta.Annotations: Muna's names for ingle's annotations", async () => {
  const r = await client.chat.completions.create({
    model: '@beta/chat', messages: [{ role: 'user', content: 'one two' }], max_tokens: 7, temperature: 0.25,
    top_p: 0.5, presence_penalty: 0.125, frequency_penalty: 0.375, response_format: { type: 'json_object' },
  });
  assert.equal(r.choices[0].message.content, 'one two');
  assert.deepEqual(seen.chat, {
    response_format: { type: 'json_object' }, max_output_tokens: 7, temperature: 0.25, top_p: 0.5, presence_penalty: 0.125, frequency_penalty: 0.375,
  });
  await assert.rejects(client.chat.completions.create({ model: '@beta/chat', messages: [{ role: 'user', content: 'a' }], temperature: 2.5 }),
    (e) => e.param === 'temperature');
  assert.equal((await client.embeddings.create({ model: '@beta/embeddings', input: 'a' })).data[0].embedding.length, 16);
  await assert.rejects(client.embeddings.create({ model: '@beta/embeddings', input: 'a', dimensions: 17 }),
    (e) => e.param === 'dimensions' && e.message.includes('between 1 and 16'));
  const speech = await client.audio.speech.create({ model: '@beta/kokoro', voice: 'bm_lewis', input: 'Hi', speed: 2, response_format: 'pcm' });
  assert.equal((await speech.arrayBuffer()).byteLength, 2 * (FRAMES / 2));
  assert.deepEqual(seen.speech, { voice: 'bm_lewis', speed: 2 });
  for (const name of ['AudioSpeed', 'AudioVoice', 'ChatAudios', 'ChatImages', 'ChatMessages', 'ChatTools', 'EmbeddingDims', 'FrequencyPenalty', 'MaxOutputTokens', 'PresencePenalty',
    'ReasoningEffort', 'ResponseFormat', 'SamplingProbability', 'SamplingTemperature', 'TranscriptionLanguage', 'TranscriptionPrompt',
    'TranscriptionTask']) {
    assert.equal(typeof Annotations[name], 'function', name);
  }
  assert.equal(Annotations.MaxOutputTokens({ name: 'n' }).kind, 'max_tokens');
  assert.equal(Annotations.SamplingProbability({ name: 'p' }).kind, 'top_p');
  assert.equal(Annotations.TranscriptionPrompt({ name: 'p' }).kind, 'transcription_prompt');
  assert.equal(Annotations.TranscriptionTask({ name: 't' }).kind, 'transcription_task');
});

test("beta.Annotations.ReasoningEffort reaches the predictor; its thinking comes back apart", async () => {
  const thinks = predictor({
    tag: '@beta/thinks',
    inputs: [Parameter.ChatMessages({ name: 'messages' }), Annotations.ReasoningEffort({ name: 'reasoning_effort', choices: ['low', 'high'], default: 'low' })],
  }, function* think({ messages, reasoning_effort }) {
    yield { choices: [{ delta: { reasoning_content: `thinking ${reasoning_effort}. ` } }] };
    yield messages.at(-1).content;
  });
  const thinking = new OpenAI({ predictors: [thinks] });
  const r = await thinking.chat.completions.create({ model: '@beta/thinks', reasoning_effort: 'high', messages: [{ role: 'user', content: 'hi' }] });
  assert.equal(r.choices[0].message.reasoning_content, 'thinking high. ');
  assert.equal(r.choices[0].message.content, 'hi');
  await assert.rejects(
    thinking.chat.completions.create({ model: '@beta/thinks', reasoning_effort: 'medium', messages: [{ role: 'user', content: 'hi' }] }),
    (e) => e instanceof BadRequestError && e.param === 'reasoning_effort',
  );
});

test("ChatMessages' context_length is reported by models and bounds max_tokens", async () => {
  const windowed = predictor({
    tag: '@beta/windowed',
    inputs: [Annotations.ChatMessages({ name: 'messages', context_length: 64 }), Annotations.MaxOutputTokens({ name: 'max_tokens', default: 8 })],
  }, function* answer({ messages, max_tokens }) { yield `${messages.length} up to ${max_tokens}`; });
  const client = new OpenAI({ predictors: [windowed] });
  assert.equal((await client.models.retrieve('@beta/windowed')).context_length, 64);
  const messages = [{ role: 'user', content: 'hi' }];
  const r = await client.chat.completions.create({ model: '@beta/windowed', messages, max_completion_tokens: 63 });
  assert.equal(r.choices[0].message.content, '1 up to 63');
  await assert.rejects(
    client.chat.completions.create({ model: '@beta/windowed', messages, max_tokens: 64 }),
    (e) => e instanceof BadRequestError && e.code === 'context_length_exceeded' && e.param === 'max_tokens' && e.message.includes('at most 63'),
  );
});

test('a Node predictor gets the images of the messages as pixel arrays (ChatImages)', async () => {
  // A 2 × 3 RGB PNG, red on the left column, blue on the right (made with Pillow).
  const png = 'iVBORw0KGgoAAAANSUhEUgAAAAIAAAADCAIAAAA2iEnWAAAAGElEQVR4nGP4z8DAwPCfiYGBgYGBAUoBACMcAgN3nJxsAAAAAElFTkSuQmCC';
  const sizes = predictor({
    tag: '@beta/sizes',
    inputs: [Parameter.ChatMessages({ name: 'messages' }), Annotations.ChatImages({ name: 'images', description: 'The images.' })],
  }, function* measure({ messages, images }) {
    yield `${messages[0].content.map((p) => p.type).join(',')}\n`;
    for (const { data, dtype, shape } of images) {
      const [h, w, c] = shape;
      const mean = [...Array(c).keys()].map((k) => Math.round(data.filter((_, i) => i % c === k).reduce((a, b) => a + b, 0) / (h * w)));
      yield `${w}x${h} ${dtype} ${mean.join(',')}\n`;
    }
  });
  const seeing = new OpenAI({ predictors: [sizes] });
  const content = [{ type: 'text', text: 'Size?' }, { type: 'image_url', image_url: { url: `data:image/png;base64,${png}` } }];
  const r = await seeing.chat.completions.create({ model: '@beta/sizes', messages: [{ role: 'user', content }] });
  assert.equal(r.choices[0].message.content, 'text,image\n2x3 uint8 128,0,128\n');
  await assert.rejects(
    seeing.chat.completions.create({ model: '@beta/sizes', messages: [{ role: 'user', content: [{ type: 'image_url', image_url: { url: `data:image/png;base64,${png.slice(0, 40)}` } }] }] }),
    (e) => e instanceof BadRequestError && e.param === 'messages[0].content[0]' && e.message.includes('truncated or corrupt'),
  );
});
