import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import sharp from 'sharp';
import { startTestServer, type TestServer } from './support/server.ts';
import { eventually } from './support/wait.ts';

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = any;

const MODEL = 'seedream-4.0';
const W = 64;
const H = 48;
/** The masked (edited) rectangle of the test mask. */
const HOLE = { left: 16, top: 12, right: 48, bottom: 36 };

function inHole(x: number, y: number): boolean {
  return x >= HOLE.left && x < HOLE.right && y >= HOLE.top && y < HOLE.bottom;
}

/** An RGB picture with a different value at every pixel, so a copied pixel is told from a drawn one. */
function patternPixels(width: number, height: number, shift = 0): Buffer {
  const raw = Buffer.alloc(width * height * 3);
  for (let y = 0; y < height; y++) {
    for (let x = 0; x < width; x++) {
      const at = (y * width + x) * 3;
      raw[at] = (x * 4 + shift) & 255;
      raw[at + 1] = (y * 5 + shift) & 255;
      raw[at + 2] = (x * y + shift) & 255;
    }
  }
  return raw;
}

const BASE_PIXELS = patternPixels(W, H);
const basePng = () => sharp(BASE_PIXELS, { raw: { width: W, height: H, channels: 3 } }).png().toBuffer();
const secondJpeg = () => sharp(patternPixels(W, H, 100), { raw: { width: W, height: H, channels: 3 } }).jpeg().toBuffer();

/** OpenAI-style mask: opaque everywhere except the transparent hole, which is what gets edited. */
async function maskPng(): Promise<Buffer> {
  const rgba = Buffer.alloc(W * H * 4, 255);
  for (let y = 0; y < H; y++) for (let x = 0; x < W; x++) if (inHole(x, y)) rgba[(y * W + x) * 4 + 3] = 0;
  return sharp(rgba, { raw: { width: W, height: H, channels: 4 } }).png().toBuffer();
}

async function download(url: string): Promise<{ bytes: Buffer; type: string | null }> {
  const res = await fetch(url);
  assert.equal(res.status, 200, `GET ${url}`);
  return { bytes: Buffer.from(await res.arrayBuffer()), type: res.headers.get('content-type') };
}

async function rgbOf(bytes: Buffer): Promise<{ data: Buffer; width: number; height: number }> {
  const { data, info } = await sharp(bytes).removeAlpha().raw().toBuffer({ resolveWithObject: true });
  return { data, width: info.width, height: info.height };
}

/** The picture's mean hue in degrees (0-360): the circular mean of its pixels' hues, weighted by their chroma. */
function meanHue({ data }: { data: Buffer }): number {
  let x = 0;
  let y = 0;
  for (let at = 0; at < data.length; at += 3) {
    const [r, g, b] = [data[at] / 255, data[at + 1] / 255, data[at + 2] / 255];
    const max = Math.max(r, g, b);
    const chroma = max - Math.min(r, g, b);
    if (chroma === 0) continue;
    const sector = max === r ? ((g - b) / chroma + 6) % 6 : max === g ? (b - r) / chroma + 2 : (r - g) / chroma + 4;
    const angle = (sector * 60 * Math.PI) / 180;
    x += Math.cos(angle) * chroma;
    y += Math.sin(angle) * chroma;
  }
  return ((Math.atan2(y, x) * 180) / Math.PI + 360) % 360;
}

/** Degrees between two hues, 0 to 180. */
const hueDistance = (a: number, b: number) => Math.min(Math.abs(a - b), 360 - Math.abs(a - b));

function countFiles(dir: string): number {
  if (!fs.existsSync(dir)) return 0;
  return fs.readdirSync(dir, { recursive: true, withFileTypes: true }).filter((e) => e.isFile()).length;
}

describe('images', () => {
  let srv: TestServer;
  let token: string;
  before(async () => {
    srv = await startTestServer();
    token = await srv.tokenFor('illustrator');
  });
  after(() => srv.close());

  const generate = (body: Json, headers: Record<string, string> = {}) => srv.fetch('/v1/images/generations', { method: 'POST', token, json: body, headers });
  const editJson = (body: Json, headers: Record<string, string> = {}) => srv.fetch('/v1/images/edits', { method: 'POST', token, json: body, headers });
  const editForm = (form: FormData, headers: Record<string, string> = {}) => srv.fetch('/v1/images/edits', { method: 'POST', token, body: form, headers });

  async function generated(body: Json): Promise<Json> {
    const res = await generate(body);
    const json: Json = await res.json();
    assert.equal(res.status, 200, JSON.stringify(json));
    return json;
  }

  async function expectError(res: Response, status: number, code: string, param: string | null): Promise<Json> {
    const json: Json = await res.json();
    assert.equal(res.status, status, JSON.stringify(json));
    assert.equal(json.error.code, code, JSON.stringify(json));
    assert.equal(json.error.param, param, JSON.stringify(json));
    return json;
  }

  async function upload(bytes: Buffer, name: string): Promise<string> {
    const form = new FormData();
    form.append('file', new Blob([new Uint8Array(bytes)]), name);
    const res = await srv.fetch('/v1/files/upload', { method: 'POST', token, body: form });
    assert.equal(res.status, 200);
    return ((await res.json()) as Json).data.url;
  }

  function editFormWith(fields: Record<string, string>, files: [string, Buffer, string][]): FormData {
    const form = new FormData();
    for (const [name, value] of Object.entries(fields)) form.append(name, value);
    for (const [field, bytes, name] of files) form.append(field, new Blob([new Uint8Array(bytes)]), name);
    return form;
  }

  describe('generations', () => {
    it('draws PNG by default, JPEG (jpeg or jpg) and WebP on request, at the requested size', async () => {
      for (const [format, expected, type] of [[undefined, 'png', 'image/png'], ['jpeg', 'jpeg', 'image/jpeg'], ['jpg', 'jpeg', 'image/jpeg'], ['webp', 'webp', 'image/webp']] as const) {
        const body = await generated({ model: MODEL, prompt: 'a harbour at dawn', size: '96x64', ...(format ? { output_format: format } : {}) });
        assert.equal(body.data.length, 1);
        assert.deepEqual(body.mediaSize, { type: 'image', width: 96, height: 64, status: 1 });
        const file = await download(body.data[0].url);
        assert.equal(file.type, type);
        const meta = await sharp(file.bytes).metadata();
        assert.equal(meta.format, expected, String(format));
        assert.deepEqual([meta.width, meta.height], [96, 64]);
        assert.match(body.data[0].url, expected === 'jpeg' ? /\.jpg$/ : new RegExp(`\\.${expected}$`));
      }
    });

    it('sizes from aspect_ratio and resolution: long side 1K/2K/4K/8K, sides rounded to multiples of 16', async () => {
      const cases: [Json, number, number][] = [
        [{ aspect_ratio: '16:9', resolution: '1K' }, 1024, 576],
        [{ aspect_ratio: '16:9' }, 1024, 576],
        [{ aspect_ratio: '21:9' }, 1024, 432],
        [{ aspect_ratio: '1:4', resolution: '2K' }, 512, 2048],
        [{ resolution: '2K' }, 2048, 2048],
        [{ aspect_ratio: '8:1', resolution: '4K' }, 4096, 512],
        [{ aspect_ratio: '16:1', resolution: '8K' }, 8192, 512],
      ];
      for (const [params, width, height] of cases) {
        const body = await generated({ model: MODEL, prompt: 'wide fields', output_format: 'jpeg', ...params });
        const meta = await sharp((await download(body.data[0].url)).bytes).metadata();
        assert.deepEqual([meta.width, meta.height], [width, height], JSON.stringify(params));
        assert.deepEqual(body.mediaSize, { type: 'image', width, height, status: 1 });
      }
      const explicit = await generated({ model: MODEL, prompt: 'wide fields', size: '40x30', aspect_ratio: '16:9', resolution: '2K' });
      assert.deepEqual([explicit.mediaSize.width, explicit.mediaSize.height], [40, 30], 'an explicit size wins');
    });

    it('n images, each different; the same seed draws the same pictures, another seed or prompt others', async () => {
      const request = { model: MODEL, prompt: 'three lanterns', size: '64x64', n: 3, seed: 42 };
      const first = await generated(request);
      assert.equal(first.data.length, 3);
      assert.equal(first.output.length, 3);
      const pictures = await Promise.all(first.data.map(async (d: Json) => (await download(d.url)).bytes));
      assert.equal(new Set(pictures.map((p) => p.toString('base64'))).size, 3, 'the n images differ');
      for (const picture of pictures) assert.equal((await sharp(picture).metadata()).format, 'png');

      const again = await generated(request);
      const repeated = await Promise.all(again.data.map(async (d: Json) => (await download(d.url)).bytes));
      assert.deepEqual(repeated, pictures, 'same seed, prompt and model: same pictures');

      const pixels = async (body: Json) => (await rgbOf((await download(body.data[0].url)).bytes)).data;
      const reference = await pixels(first);
      assert.notDeepEqual(await pixels(await generated({ ...request, n: 1, seed: 43 })), reference, 'another seed differs');
      assert.notDeepEqual(await pixels(await generated({ ...request, n: 1, prompt: 'three kites' })), reference, 'another prompt differs');
      assert.notDeepEqual(await pixels(await generated({ ...request, n: 1, model: 'seedream-4.5' })), reference, 'another model differs');
    });

    it('a prompt naming a colour is drawn in that hue, whatever the seed', async () => {
      const hueOf = async (prompt: string, seed: number) => meanHue(await rgbOf((await download((await generated({ model: MODEL, prompt, size: '64x64', seed })).data[0].url)).bytes));
      for (const [prompt, hue] of [['a red fox', 0], ['a blue whale', 220], ['Golden fields', 48]] as const) {
        for (const seed of [1, 2, 3]) {
          const mean = await hueOf(prompt, seed);
          assert.ok(hueDistance(mean, hue) <= 30, `${prompt} (seed ${seed}): mean hue ${mean.toFixed(0)}, expected near ${hue}`);
        }
      }
      for (const seed of [1, 2, 3]) {
        const mean = await hueOf('a green frog on a red leaf', seed);
        assert.ok(hueDistance(mean, 125) < hueDistance(mean, 0), `the first colour named leads (seed ${seed}): mean hue ${mean.toFixed(0)}`);
      }
    });

    it('validates the image parameters, naming the field; other parameters pass through to the task', async () => {
      const base = { model: MODEL, prompt: 'x' };
      const cases: [Json, string, string][] = [
        [{ ...base, size: '0x64' }, 'invalid_parameter', 'size'],
        [{ ...base, size: '64' }, 'invalid_parameter', 'size'],
        [{ ...base, size: '9000x9000' }, 'invalid_parameter', 'size'],
        [{ ...base, size: '64x8193' }, 'invalid_parameter', 'size'],
        [{ ...base, aspect_ratio: '16-9' }, 'invalid_parameter', 'aspect_ratio'],
        [{ ...base, aspect_ratio: '0:1' }, 'invalid_parameter', 'aspect_ratio'],
        [{ ...base, resolution: '3K' }, 'invalid_parameter', 'resolution'],
        [{ ...base, n: 0 }, 'invalid_parameter', 'n'],
        [{ ...base, n: 11 }, 'invalid_parameter', 'n'],
        [{ ...base, n: 1.5 }, 'invalid_parameter', 'n'],
        [{ ...base, seed: 'abc' }, 'invalid_parameter', 'seed'],
        [{ ...base, seed: 1.5 }, 'invalid_parameter', 'seed'],
        [{ ...base, output_format: 'gif' }, 'invalid_parameter', 'output_format'],
        [{ model: MODEL }, 'missing_parameter', 'prompt'],
      ];
      for (const [body, code, param] of cases) await expectError(await generate(body), 400, code, param);

      const ok = await generated({ ...base, size: '8192x16', sampler: 'euler', steps: 30, style: { tone: 'warm' } });
      assert.deepEqual(ok.mediaSize, { type: 'image', width: 8192, height: 16, status: 1 }, 'the largest side is drawn');
      const record: Json = await (await srv.fetch(`/v1/ai/result/${ok.task_id}`, { token })).json();
      assert.deepEqual(record.generate_info.input, { prompt: 'x', size: '8192x16', sampler: 'euler', steps: 30, style: { tone: 'warm' } });
    });
  });

  describe('edits', () => {
    it('multipart: the edit stays inside the mask (transparent = edited), pixels outside equal the base', async () => {
      const form = editFormWith(
        { prompt: 'paint the window gold', model: MODEL, seed: '5', _metadata: '{"job": "window"}' },
        [['image[]', await basePng(), 'base.png'], ['image[]', await secondJpeg(), 'second.jpg'], ['mask', await maskPng(), 'mask.png']],
      );
      const res = await editForm(form);
      const body: Json = await res.json();
      assert.equal(res.status, 200, JSON.stringify(body));
      assert.equal(body.status, 'success');
      assert.equal(body.type, 'image');
      assert.equal(body.created, Math.floor(body.finished_at / 1000));
      assert.equal(body.data.length, 1);
      assert.deepEqual(body.data, body.output.map((url: string) => ({ url })));

      const out = await rgbOf((await download(body.data[0].url)).bytes);
      assert.deepEqual([out.width, out.height], [W, H], 'the output keeps the base size');
      let inside = 0;
      let changedInside = 0;
      for (let y = 0; y < H; y++) {
        for (let x = 0; x < W; x++) {
          const at = (y * W + x) * 3;
          const same = out.data.subarray(at, at + 3).equals(BASE_PIXELS.subarray(at, at + 3));
          if (!inHole(x, y)) assert.ok(same, `pixel ${x},${y} outside the mask must equal the base`);
          else {
            inside++;
            if (!same) changedInside++;
          }
        }
      }
      assert.ok(changedInside > inside * 0.95, `the masked region is edited (${changedInside}/${inside} pixels changed)`);

      // The uploaded files are stored for the caller and the task input holds their URLs.
      const record: Json = await (await srv.fetch(`/v1/ai/result/${body.task_id}`, { token })).json();
      const input = record.generate_info.input;
      assert.equal(input.image.length, 2);
      assert.deepEqual(input._metadata, { job: 'window' });
      assert.equal(input.seed, 5, 'form fields are typed like the JSON body');
      assert.deepEqual((await download(input.image[0])).bytes, await basePng());
      assert.deepEqual((await download(input.image[1])).bytes, await secondJpeg());
      assert.deepEqual((await download(input.mask)).bytes, await maskPng());
    });

    it('a mask without transparency is read by luminance: white is edited, black kept', async () => {
      const grey = Buffer.alloc(W * H, 0);
      for (let y = 0; y < H; y++) for (let x = 0; x < W; x++) if (inHole(x, y)) grey[y * W + x] = 255;
      const mask = await sharp(grey, { raw: { width: W, height: H, channels: 1 } }).png().toBuffer();
      const res = await editForm(editFormWith({ prompt: 'paint the window gold', model: MODEL, seed: '5' }, [['image[]', await basePng(), 'base.png'], ['mask', mask, 'mask.png']]));
      const body: Json = await res.json();
      assert.equal(res.status, 200, JSON.stringify(body));
      const out = await rgbOf((await download(body.data[0].url)).bytes);
      let changedInside = 0;
      for (let y = 0; y < H; y++) {
        for (let x = 0; x < W; x++) {
          const at = (y * W + x) * 3;
          const same = out.data.subarray(at, at + 3).equals(BASE_PIXELS.subarray(at, at + 3));
          if (!inHole(x, y)) assert.ok(same, `pixel ${x},${y} under black must equal the base`);
          else if (!same) changedInside++;
        }
      }
      assert.ok(changedInside > (HOLE.right - HOLE.left) * (HOLE.bottom - HOLE.top) * 0.95, 'the white region is edited');
    });

    it('a JPEG base; without a mask the whole picture is edited; also accepts the `image` part name', async () => {
      const base = await secondJpeg();
      const res = await editForm(editFormWith({ prompt: 'evening light', model: MODEL, output_format: 'webp' }, [['image', base, 'photo.jpeg']]));
      const body: Json = await res.json();
      assert.equal(res.status, 200, JSON.stringify(body));
      const file = await download(body.data[0].url);
      assert.equal((await sharp(file.bytes).metadata()).format, 'webp');
      const out = await rgbOf(file.bytes);
      const before = await rgbOf(base);
      let changed = 0;
      for (let p = 0; p < W * H; p++) if (Math.abs(out.data[p * 3]! - before.data[p * 3]!) + Math.abs(out.data[p * 3 + 1]! - before.data[p * 3 + 1]!) + Math.abs(out.data[p * 3 + 2]! - before.data[p * 3 + 2]!) > 12) changed++;
      assert.ok(changed > W * H * 0.9, `a global edit changes the picture (${changed} of ${W * H})`);
    });

    it('size, aspect_ratio and resolution set the output size; n outputs', async () => {
      const files: [string, Buffer, string][] = [['image[]', await basePng(), 'base.png']];
      const cases: [Record<string, string>, number, number][] = [
        [{ size: '32x32' }, 32, 32],
        [{ aspect_ratio: '1:1' }, 64, 64],
        [{ resolution: '1K' }, 1024, 768],
        [{ aspect_ratio: '16:9', resolution: '1K' }, 1024, 576],
      ];
      for (const [fields, width, height] of cases) {
        const res = await editForm(editFormWith({ prompt: 'resize', model: MODEL, n: '2', ...fields }, files));
        const body: Json = await res.json();
        assert.equal(res.status, 200, JSON.stringify(body));
        assert.equal(body.data.length, 2);
        for (const d of body.data) {
          const meta = await sharp((await download(d.url)).bytes).metadata();
          assert.deepEqual([meta.width, meta.height], [width, height], JSON.stringify(fields));
        }
      }
    });

    it('JSON form with uploaded URLs: deterministic per seed, the same as the multipart form', async () => {
      const [baseUrl, secondUrl, maskUrl] = [await upload(await basePng(), 'base.png'), await upload(await secondJpeg(), 'second.jpg'), await upload(await maskPng(), 'mask.png')];
      const request = { prompt: 'paint the window gold', model: MODEL, image: [baseUrl, secondUrl], mask: maskUrl, seed: 5 };
      const pixels = async (body: Json) => (await rgbOf((await download(body.data[0].url)).bytes)).data;

      let res = await editJson(request);
      const first: Json = await res.json();
      assert.equal(res.status, 200, JSON.stringify(first));
      const reference = await pixels(first);
      res = await editJson(request);
      assert.deepEqual(await pixels(await res.json()), reference, 'same inputs and seed: same output');
      res = await editJson({ ...request, seed: 6 });
      assert.notDeepEqual(await pixels(await res.json()), reference, 'another seed: another edit');

      const multipart = await editForm(editFormWith(
        { prompt: request.prompt, model: MODEL, seed: '5' },
        [['image[]', await basePng(), 'base.png'], ['image[]', await secondJpeg(), 'second.jpg'], ['mask', await maskPng(), 'mask.png']],
      ));
      assert.deepEqual(await pixels(await multipart.json()), reference, 'the two request forms edit alike');

      res = await editJson({ prompt: 'one image as a string', model: MODEL, image: baseUrl, size: '16x16' });
      const single: Json = await res.json();
      assert.equal(res.status, 200, JSON.stringify(single));
      assert.deepEqual(single.mediaSize, { type: 'image', width: 16, height: 16, status: 1 });
    });

    it('async: answers the task id at once; the result shows success', async () => {
      const url = await upload(await basePng(), 'base.png');
      const res = await editJson({ prompt: 'later', model: MODEL, image: [url] }, { 'x-async': '1' });
      assert.equal(res.status, 200);
      const body: Json = await res.json();
      assert.equal(body.status, 'submitted');
      assert.match(body.task_id, /^task_/);
      const record: Json = await eventually('the edit to succeed', async () => {
        const r: Json = await (await srv.fetch(`/v1/ai/result/${body.task_id}`, { token })).json();
        return r.queue_status.status === 'success' ? r : undefined;
      });
      assert.equal(record.queue_status.output_content.length, 1);
      assert.equal(record.queue_status.output_content[0].type, 'image');
      const meta = await sharp((await download(record.queue_status.output_content[0].url)).bytes).metadata();
      assert.deepEqual([meta.width, meta.height], [W, H]);
    });

    it('an input that is not an image fails the task with a clear message', async () => {
      const url = await upload(Buffer.from('just some words'), 'notes.txt');
      const res = await editJson({ prompt: 'edit text?', model: MODEL, image: [url] });
      const body = await expectError(res, 502, 'task_failed', null);
      assert.match(body.error.task_id, /^task_/);
      const record: Json = await (await srv.fetch(`/v1/ai/result/${body.error.task_id}`, { token })).json();
      assert.equal(record.queue_status.status, 'failed');
      assert.match(record.queue_status.message, /image\[0\] is not a readable image/);
    });

    it('refuses bad forms with 400 naming the field, and keeps none of their files', async () => {
      const png = await basePng();
      const gif = await sharp(BASE_PIXELS, { raw: { width: W, height: H, channels: 3 } }).gif().toBuffer();
      const blobs = path.join(srv.dataDir, 'blobs');
      const before = countFiles(blobs);
      const prompt = { prompt: 'x', model: MODEL };

      const seventeen = editFormWith(prompt, Array.from({ length: 17 }, (_, i): [string, Buffer, string] => ['image[]', png, `p${i}.png`]));
      await expectError(await editForm(seventeen), 400, 'invalid_parameter', 'image');
      await expectError(await editForm(editFormWith(prompt, [['image[]', png, 'a.png'], ['image[]', gif, 'b.gif']])), 400, 'invalid_parameter', 'image');
      await expectError(await editForm(editFormWith(prompt, [['image[]', gif, 'renamed.png']])), 400, 'invalid_parameter', 'image');
      await expectError(await editForm(editFormWith(prompt, [['image[]', Buffer.from('hello'), 'notes.txt']])), 400, 'invalid_parameter', 'image');
      await expectError(await editForm(editFormWith(prompt, [['image[]', png, 'a.png'], ['mask', gif, 'mask.gif']])), 400, 'invalid_parameter', 'mask');
      await expectError(await editForm(editFormWith({ model: MODEL }, [['image[]', png, 'a.png']])), 400, 'missing_parameter', 'prompt');
      await expectError(await editForm(editFormWith(prompt, [])), 400, 'missing_parameter', 'image');
      await expectError(await editForm(editFormWith({ ...prompt, _metadata: '{not json' }, [['image[]', png, 'a.png']])), 400, 'invalid_parameter', '_metadata');
      await expectError(await editForm(editFormWith({ ...prompt, n: 'many' }, [['image[]', png, 'a.png']])), 400, 'invalid_parameter', 'n');
      await expectError(await editForm(editFormWith({ ...prompt, size: '9000x10' }, [['image[]', png, 'a.png']])), 400, 'invalid_parameter', 'size');
      await expectError(await editForm(editFormWith({ ...prompt, model: 'gpt-4.1' }, [['image[]', png, 'a.png']])), 400, 'model_capability_mismatch', 'model');
      await expectError(await editForm(editFormWith({ ...prompt, model: 'no-such-model' }, [['image[]', png, 'a.png']])), 404, 'model_not_found', 'model');

      // 20 MB per file: a bigger image is 413 even after a good one, and neither is kept.
      const big = Buffer.concat([png, Buffer.alloc(21 * 1024 * 1024 - png.length, 1)]);
      const res = await editForm(editFormWith(prompt, [['image[]', png, 'a.png'], ['image[]', big, 'big.png']]));
      const tooLarge = await expectError(res, 413, 'file_too_large', 'image');
      assert.equal(tooLarge.error.type, 'invalid_request_error');
      assert.equal(countFiles(blobs), before, 'no bytes left behind');
    });

    it('refuses bad JSON bodies with 400 naming the field', async () => {
      const url = await upload(await basePng(), 'base.png');
      const base = { prompt: 'x', model: MODEL };
      await expectError(await editJson({ ...base, image: Array.from({ length: 17 }, () => url) }), 400, 'invalid_parameter', 'image');
      await expectError(await editJson({ ...base, image: [] }), 400, 'missing_parameter', 'image');
      await expectError(await editJson(base), 400, 'missing_parameter', 'image');
      await expectError(await editJson({ ...base, image: 7 }), 400, 'invalid_parameter', 'image');
      await expectError(await editJson({ model: MODEL, image: url }), 400, 'missing_parameter', 'prompt');
      await expectError(await editJson({ ...base, image: url, _metadata: 'nope' }), 400, 'invalid_parameter', '_metadata');
      await expectError(await editJson({ ...base, image: url, resolution: '16K' }), 400, 'invalid_parameter', 'resolution');
      await expectError(await editJson({ ...base, model: 'gpt-4.1', image: url }), 400, 'model_capability_mismatch', 'model');
    });
  });
});
