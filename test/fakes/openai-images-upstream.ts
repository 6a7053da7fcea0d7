import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { createHash } from 'node:crypto';
import sharp from 'sharp';

/** A file part of a multipart request. */
export interface ReceivedFilePart {
  field: string;
  fileName: string;
  type: string;
  data: Buffer;
}

/** One request the fake got. */
export interface ReceivedImagesRequest {
  method: string;
  path: string;
  headers: http.IncomingHttpHeaders;
  /** JSON body, when the request had one. */
  json?: Record<string, unknown>;
  /** Multipart text fields (each name with all its values), when the request was a form. */
  fields?: Record<string, string[]>;
  files?: ReceivedFilePart[];
}

/** A scripted answer that replaces the fake's own for one request. */
export interface ScriptedAnswer {
  status: number;
  body?: unknown;
  headers?: Record<string, string>;
}

/** Sizes GPT Image models take (openai-python `image_generate_params.py`). */
const GPT_IMAGE_SIZES = new Set(['1024x1024', '1536x1024', '1024x1536', 'auto']);
const DALLE3_SIZES = new Set(['1024x1024', '1792x1024', '1024x1792']);
const OUTPUT_FORMATS = new Set(['png', 'jpeg', 'webp']);

function error(status: number, message: string, param: string | null, code: string | null, type = 'invalid_request_error'): ScriptedAnswer {
  return { status, body: { error: { message, type, param, code } } };
}

/**
 * A fake OpenAI images API on 127.0.0.1: POST /v1/images/generations (JSON) and
 * /v1/images/edits (multipart) with bearer authentication and OpenAI's validation and error
 * shapes; GPT Image models answer `b64_json` with usage, dall-e models a URL served by the fake.
 * Images are real PNG/JPEG/WebP files made with sharp. It records every request; tests can
 * script answers (429, 5xx, refusals) and hold answers back.
 */
export class FakeOpenAiImages {
  readonly requests: ReceivedImagesRequest[] = [];
  /** Answers used, in order, before the fake's own. */
  readonly script: ScriptedAnswer[] = [];
  private readonly hosted = new Map<string, Buffer>();
  private held: Promise<void> | undefined;
  private releaseHeld: (() => void) | undefined;
  private readonly waiters: { count: number; resolve: () => void }[] = [];

  private constructor(private readonly server: http.Server, readonly apiKey: string) {}

  static async start(apiKey = 'sk-test-images'): Promise<FakeOpenAiImages> {
    const server = http.createServer();
    const fake = new FakeOpenAiImages(server, apiKey);
    server.on('request', (req, res) => {
      fake.onRequest(req, res).catch((err: unknown) => {
        res.writeHead(500, { 'content-type': 'application/json' }).end(JSON.stringify({ error: { message: String(err) } }));
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    return fake;
  }

  /** Base URL as a provider's base_url: http://127.0.0.1:PORT/v1. */
  get url(): string {
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}/v1`;
  }

  /** Image API requests (downloads of hosted images left out). */
  get apiRequests(): ReceivedImagesRequest[] {
    return this.requests.filter((r) => r.path.startsWith('/v1/images/'));
  }

  /** Serves the bytes at a URL of the fake (as dall-e result URLs are served) and answers the URL. */
  host(image: Buffer, name: string): string {
    this.hosted.set(`/hosted/${name}`, image);
    return `${this.url.replace(/\/v1$/, '')}/hosted/${name}`;
  }

  /** Requests are answered only after release(). */
  hold(): void {
    this.held = new Promise((resolve) => (this.releaseHeld = resolve));
  }

  release(): void {
    this.releaseHeld?.();
    this.held = undefined;
  }

  /** Resolves once the fake has received `count` image API requests. */
  received(count: number): Promise<void> {
    if (this.apiRequests.length >= count) return Promise.resolve();
    return new Promise((resolve) => this.waiters.push({ count, resolve }));
  }

  async close(): Promise<void> {
    this.release();
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private async onRequest(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const raw = Buffer.concat(chunks);
    const path = new URL(req.url!, 'http://x').pathname;
    const record: ReceivedImagesRequest = { method: req.method!, path, headers: req.headers };
    const contentType = req.headers['content-type'] ?? '';
    if (contentType.startsWith('application/json')) record.json = JSON.parse(raw.toString('utf8')) as Record<string, unknown>;
    if (contentType.startsWith('multipart/form-data')) {
      const form = await new Request('http://x/', { method: 'POST', headers: { 'content-type': contentType }, body: raw }).formData();
      record.fields = {};
      record.files = [];
      for (const [field, value] of form.entries()) {
        if (typeof value === 'string') (record.fields[field] ??= []).push(value);
        else record.files.push({ field, fileName: value.name, type: value.type, data: Buffer.from(await value.arrayBuffer()) });
      }
    }
    this.requests.push(record);
    for (const waiter of [...this.waiters]) {
      if (this.apiRequests.length >= waiter.count) {
        this.waiters.splice(this.waiters.indexOf(waiter), 1);
        waiter.resolve();
      }
    }
    if (req.method === 'GET' && path.startsWith('/hosted/')) {
      const image = this.hosted.get(path);
      if (!image) return void res.writeHead(404).end();
      return void res.writeHead(200, { 'content-type': 'image/png' }).end(image);
    }
    if (this.held) await this.held;
    if (res.destroyed) return;
    const answer = this.script.shift() ?? (await this.answer(record));
    res.writeHead(answer.status, { 'content-type': 'application/json', ...answer.headers }).end(answer.body === undefined ? '' : JSON.stringify(answer.body));
  }

  private async answer(req: ReceivedImagesRequest): Promise<ScriptedAnswer> {
    if (req.headers.authorization !== `Bearer ${this.apiKey}`) return error(401, 'Incorrect API key provided.', null, 'invalid_api_key');
    if (req.method !== 'POST') return error(405, 'Method not allowed', null, null);
    const generation = req.path === '/v1/images/generations';
    const edit = req.path === '/v1/images/edits';
    if (!generation && !edit) return error(404, `Invalid URL (${req.method} ${req.path})`, null, null);
    // One view of the parameters, whichever the body form.
    const params: Record<string, unknown> = generation ? (req.json ?? {}) : Object.fromEntries(Object.entries(req.fields ?? {}).map(([k, v]) => [k, v[0]]));
    if (edit && !req.fields) return error(400, 'The request must be multipart/form-data.', null, null);
    if (generation && !req.json) return error(400, 'The request must be JSON.', null, null);
    const model = String(params.model ?? 'dall-e-2');
    if (typeof params.prompt !== 'string' || params.prompt === '') return error(400, "Missing required parameter: 'prompt'.", 'prompt', 'missing_required_parameter');
    if (edit) {
      const images = (req.files ?? []).filter((f) => f.field === 'image' || f.field === 'image[]');
      if (images.length === 0) return error(400, "Missing required parameter: 'image'.", 'image', 'missing_required_parameter');
      for (const image of images) {
        if (!['image/png', 'image/jpeg', 'image/webp'].includes(image.type)) return error(400, `Invalid file '${image.fileName}': unsupported mimetype ('${image.type}'). Supported file formats are 'image/jpeg', 'image/png', and 'image/webp'.`, 'image', 'unsupported_file_mimetype');
      }
      const mask = req.files?.find((f) => f.field === 'mask');
      if (mask && mask.type !== 'image/png') return error(400, "Invalid mask: must be a PNG.", 'mask', 'invalid_value');
    }
    const gptImage = model.startsWith('gpt-image');
    const size = String(params.size ?? (gptImage ? 'auto' : '1024x1024'));
    const sizes = gptImage ? GPT_IMAGE_SIZES : model === 'dall-e-3' ? DALLE3_SIZES : new Set(['256x256', '512x512', '1024x1024']);
    if (!sizes.has(size)) return error(400, `Invalid value: '${size}'. Supported values are: ${[...sizes].map((s) => `'${s}'`).join(', ')}.`, 'size', 'invalid_value');
    const n = params.n === undefined ? 1 : Number(params.n);
    if (!Number.isInteger(n) || n < 1 || n > 10) return error(400, `Invalid value for 'n': ${String(params.n)}.`, 'n', 'invalid_value');
    const format = String(params.output_format ?? 'png');
    if (!OUTPUT_FORMATS.has(format)) return error(400, `Invalid value: '${format}'. Supported values are: 'png', 'jpeg' and 'webp'.`, 'output_format', 'invalid_value');
    if (params.response_format !== undefined && gptImage) return error(400, "Unknown parameter: 'response_format'.", 'response_format', 'unknown_parameter');

    const [width, height] = (size === 'auto' ? '1024x1024' : size).split('x').map(Number) as [number, number];
    const data: Record<string, unknown>[] = [];
    for (let i = 0; i < n; i++) {
      const seed = createHash('sha256').update(`${params.prompt as string}#${i}`).digest();
      const image = sharp({ create: { width, height, channels: 3, background: { r: seed[0]!, g: seed[1]!, b: seed[2]! } } });
      const bytes = await (format === 'jpeg' ? image.jpeg() : format === 'webp' ? image.webp() : image.png()).toBuffer();
      if (gptImage || params.response_format === 'b64_json') {
        data.push({ b64_json: bytes.toString('base64') });
      } else {
        data.push({ url: this.host(bytes, `${seed.toString('hex').slice(0, 16)}.png`), revised_prompt: `${params.prompt as string}, detailed` });
      }
    }
    return {
      status: 200,
      body: {
        created: Math.floor(Date.now() / 1000),
        data,
        ...(gptImage
          ? {
              background: 'opaque',
              output_format: format,
              quality: String(params.quality ?? 'auto') === 'auto' ? 'medium' : params.quality,
              size: `${width}x${height}`,
              usage: { input_tokens: 50, input_tokens_details: { image_tokens: edit ? 40 : 0, text_tokens: edit ? 10 : 50 }, output_tokens: 272 * n, total_tokens: 50 + 272 * n },
            }
          : {}),
      },
    };
  }
}
