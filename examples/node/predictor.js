'use strict';
// Your own predictors, served by the OpenAI client: a chat model with a persona (wrapping the
// default model) and a speech "model" that plays a tone per voice.
//
//     node examples/node/predictor.js
const fs = require('fs');
const { OpenAI, Parameter, predictor } = require('ingle');

const model = '@local/smollm2-135m-instruct';
const client = new OpenAI();

const pirate = predictor({
  tag: '@me/pirate',
  description: 'The default model, told to talk like a pirate.',
  inputs: [Parameter.ChatMessages({ name: 'messages' }), Parameter.MaxTokens({ name: 'max_tokens', default: 64 })],
}, async function* pirate({ messages, max_tokens }) {
  const system = { role: 'system', content: 'You are a pirate. Answer briefly, like a pirate.' };
  yield* await client.chat.completions.create({ model, messages: [system, ...messages], max_tokens, stream: true });
});

const tone = predictor({
  tag: '@me/tone',
  inputs: [
    Parameter.Generic({ name: 'text', type: 'string', description: "Text to 'speak'." }),
    Parameter.AudioVoice({ name: 'voice', voices: ['low', 'high'] }),
    Parameter.AudioSpeed({ name: 'speed', default: 1, min: 0.25, max: 4 }),
  ],
  outputs: [Parameter.Audio({ name: 'audio', sample_rate: 24000, description: 'A beep per word.' })],
}, function* beeps({ text, voice, speed }) {
  const frequency = voice === 'low' ? 220 : 880;
  for (const _ of text.split(' ')) {
    yield new Float32Array(Math.round(4800 / speed)).map((_, i) => 0.3 * Math.sin((2 * Math.PI * frequency * i) / 24000));
  }
});

(async () => {
  client.predictors.register(pirate, tone);
  const stream = await client.chat.completions.create({
    model: '@me/pirate', messages: [{ role: 'user', content: 'Where is the treasure?' }], stream: true,
  });
  for await (const chunk of stream) process.stdout.write(chunk.choices[0]?.delta?.content ?? '');
  process.stdout.write('\n');
  const speech = await client.audio.speech.create({ model: '@me/tone', voice: 'high', input: 'one two three', response_format: 'wav' });
  const bytes = Buffer.from(await speech.arrayBuffer());
  fs.writeFileSync('tone.wav', bytes);
  console.log(`tone.wav: ${bytes.length} bytes`);
})();
