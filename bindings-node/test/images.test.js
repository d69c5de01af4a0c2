'use strict';
// client.images.generate on Node predictors annotated ImageWidth, ImageHeight, ImageCount:
// eager and generator, created and streamed, the images decoded back, errors by name.
const test = require('node:test');
const assert = require('node:assert/strict');
const zlib = require('node:zlib');
const { OpenAI, BadRequestError, InternalServerError, Parameter, predictor, beta } = require('..');

/** An RGB image: red from the prompt, green a gradient along x, `step` in blue. */
function painted(prompt, width, height, step = 0) {
  const data = new Uint8Array(width * height * 3);
  const red = prompt.includes('red') ? 255 : 0;
  for (let y = 0; y < height; y += 1) {
    for (let x = 0; x < width; x += 1) {
      const at = (y * width + x) * 3;
      data[at] = red;
      data[at + 1] = Math.floor((x * 255) / Math.max(width - 1, 1));
      data[at + 2] = step;
    }
  }
  return { data, shape: [height, width, 3] };
}

const size = [
  Parameter.Generic({ name: 'prompt', type: 'string' }),
  Parameter.ImageWidth({ name: 'width', default: 8, min: 1, max: 256 }),
  beta.Annotations.ImageHeight({ name: 'height', default: 4 }),
];
const paint = predictor({
  tag: '@test/paint',
  inputs: [...size, Parameter.ImageCount({ name: 'count', default: 1, max: 4 })],
  outputs: [Parameter.Generic({ name: 'images', type: 'tensor' })],
}, ({ prompt, width, height, count }) => Array.from({ length: count }, (_, i) => painted(prompt, width, height, i)));
const refine = predictor({
  tag: '@test/refine',
  inputs: size,
  outputs: [Parameter.Generic({ name: 'image', type: 'tensor' })],
}, function* passes({ prompt, width, height }) {
  for (const step of [1, 2, 3]) yield painted(prompt, width, height, step);
});
const floats = predictor({
  tag: '@test/floats',
  inputs: size,
  outputs: [Parameter.Generic({ name: 'image', type: 'tensor' })],
}, () => ({ data: new Float32Array(12), shape: [2, 2, 3] }));

const client = new OpenAI({ predictors: [paint, refine, floats] });

/** The RGB pixels of a PNG of 8-bit RGB rows (filters undone), by Node's zlib alone. */
function decodePng(b64) {
  const png = Buffer.from(b64, 'base64');
  assert.deepEqual([...png.subarray(0, 8)], [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);
  let at = 8;
  let width;
  let height;
  const idat = [];
  while (at < png.length) {
    const length = png.readUInt32BE(at);
    const type = png.toString('ascii', at + 4, at + 8);
    const body = png.subarray(at + 8, at + 8 + length);
    if (type === 'IHDR') {
      width = body.readUInt32BE(0);
      height = body.readUInt32BE(4);
      assert.equal(body[8], 8); // bit depth
      assert.equal(body[9], 2); // RGB
    }
    if (type === 'IDAT') idat.push(body);
    at += 12 + length;
  }
  const raw = zlib.inflateSync(Buffer.concat(idat));
  const stride = width * 3;
  const pixels = Buffer.alloc(height * stride);
  for (let y = 0; y < height; y += 1) {
    const filter = raw[y * (stride + 1)];
    for (let x = 0; x < stride; x += 1) {
      const value = raw[y * (stride + 1) + 1 + x];
      const left = x >= 3 ? pixels[y * stride + x - 3] : 0;
      const up = y > 0 ? pixels[(y - 1) * stride + x] : 0;
      const upLeft = x >= 3 && y > 0 ? pixels[(y - 1) * stride + x - 3] : 0;
      const p = left + up - upLeft;
      const [pa, pb, pc] = [Math.abs(p - left), Math.abs(p - up), Math.abs(p - upLeft)];
      const paeth = pa <= pb && pa <= pc ? left : pb <= pc ? up : upLeft;
      const predictor = [0, left, up, (left + up) >> 1, paeth][filter];
      pixels[y * stride + x] = (value + predictor) & 0xff;
    }
  }
  return { width, height, pixel: (x, y) => [...pixels.subarray(y * stride + x * 3, y * stride + x * 3 + 3)] };
}

test('an eager predictor paints at the size and count asked', async () => {
  const r = await client.images.generate({ model: '@test/paint', prompt: 'a red square', size: '16x9', n: 2 });
  assert.equal(r.size, '16x9');
  assert.equal(r.output_format, 'png');
  assert.equal(r.data.length, 2);
  r.data.forEach((image, i) => {
    const png = decodePng(image.b64_json);
    assert.equal(png.width, 16);
    assert.equal(png.height, 9);
    assert.deepEqual(png.pixel(0, 0), [255, 0, i]);
    assert.deepEqual(png.pixel(15, 8), [255, 255, i]);
  });
  const jpeg = await client.images.generate({ model: '@test/paint', prompt: 'blue', output_format: 'jpeg' });
  assert.deepEqual([...Buffer.from(jpeg.data[0].b64_json, 'base64').subarray(0, 2)], [0xff, 0xd8]);
});

test("a generator's yields stream as partial images, then the completed one", async () => {
  const stream = await client.images.generate({ model: '@test/refine', prompt: 'red', stream: true, partial_images: 2 });
  const events = [];
  for await (const event of stream) events.push(event);
  assert.deepEqual(events.map((e) => e.type), ['image_generation.partial_image', 'image_generation.partial_image', 'image_generation.completed']);
  assert.deepEqual(events.map((e) => decodePng(e.b64_json).pixel(0, 0)[2]), [1, 2, 3]);
  const whole = await client.images.generate({ model: '@test/refine', prompt: 'red' });
  assert.equal(decodePng(whole.data[0].b64_json).pixel(0, 0)[2], 3);
});

test('mistakes are errors naming the field or the output', async () => {
  for (const [body, param] of [[{ size: '9000x9000' }, 'size'], [{ n: 5 }, 'n'], [{ response_format: 'url' }, 'response_format']]) {
    await assert.rejects(client.images.generate({ model: '@test/paint', prompt: 'red', ...body }),
      (e) => e instanceof BadRequestError && e.param === param);
  }
  await assert.rejects(client.images.generate({ model: '@test/floats', prompt: 'red' }),
    (e) => e instanceof InternalServerError && /float32/.test(e.message));
  assert.equal((await client.images.generate({ model: '@test/paint', prompt: 'red' })).data.length, 1);
});
