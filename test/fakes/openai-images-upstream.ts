import type { ServerResponse } from 'node:http';
import { createHash } from 'node:crypto';
import sharp from 'sharp';
import { RecordingUpstream, sendBytes, sendJson, type RecordedRequest, type Reply } from './recording-upstream.ts';

/** Sizes GPT Image models take (openai-python `image_generate_params.py`). */
const GPT_IMAGE_SIZES = new Set(['1024x1024', '1536x1024', '1024x1536', 'auto']);
const DALLE3_SIZES = new Set(['1024x1024', '1792x1024', '1024x1792']);
const OUTPUT_FORMATS = new Set(['png', 'jpeg', 'webp']);

function error(status: number, message: string, param: string | null, code: string | null, type = 'invalid_request_error'): Reply {
  return { status, body: { error: { message, type, param, code } } };
}

/**
 * A fake OpenAI images API on 127.0.0.1: POST /v1/images/generations (JSON) and
 * /v1/images/edits (multipart) with bearer authentication and OpenAI's validation and error
 * shapes; GPT Image models answer `b64_json` with usage, dall-e models a URL served by the fake.
 * Images are real PNG/JPEG/WebP files made with sharp. It records every request; tests can
 * inject answers (429, 5xx, refusals) and hold answers back.
 */
export class FakeOpenAiImages extends RecordingUpstream {
  private readonly hosted = new Map<string, Buffer>();
  private held: Promise<void> | undefined;
  private releaseHeld: (() => void) | undefined;

  readonly apiKey: string;

  private constructor(apiKey: string) {
    super();
    this.apiKey = apiKey;
  }

  static start(apiKey = 'sk-test-images'): Promise<FakeOpenAiImages> {
    return new FakeOpenAiImages(apiKey).listen();
  }

  /** Base URL as a provider's base_url: http://127.0.0.1:PORT/v1. */
  get baseUrl(): string {
    return `${this.url}/v1`;
  }

  /** Image API requests (downloads of hosted images left out). */
  get apiRequests(): RecordedRequest[] {
    return this.requests.filter((r) => r.path.startsWith('/v1/images/'));
  }

  /** Serves the bytes at a URL of the fake (as dall-e result URLs are served) and answers the URL. */
  host(image: Buffer, name: string): string {
    this.hosted.set(`/hosted/${name}`, image);
    return `${this.url}/hosted/${name}`;
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
    return this.until(() => this.apiRequests.length >= count);
  }

  override close(): Promise<void> {
    this.release();
    return super.close();
  }

  protected async handle(req: RecordedRequest, res: ServerResponse): Promise<void> {
    if (req.method === 'GET' && req.path.startsWith('/hosted/')) {
      const image = this.hosted.get(req.path);
      if (!image) return void res.writeHead(404).end();
      return sendBytes(res, image, 'image/png');
    }
    if (this.held) await this.held;
    if (res.destroyed) return;
    const answer = await this.answer(req);
    sendJson(res, answer.status, answer.body, answer.headers);
  }

  private async answer(req: RecordedRequest): Promise<Reply> {
    if (req.headers.authorization !== `Bearer ${this.apiKey}`) return error(401, 'Incorrect API key provided.', null, 'invalid_api_key');
    if (req.method !== 'POST') return error(405, 'Method not allowed', null, null);
    const generation = req.path === '/v1/images/generations';
    const edit = req.path === '/v1/images/edits';
    if (!generation && !edit) return error(404, `Invalid URL (${req.method} ${req.path})`, null, null);
    // One view of the parameters, whichever the body form.
    const params: Record<string, unknown> = generation ? ((req.json ?? {}) as Record<string, unknown>) : Object.fromEntries([...(req.fields ?? [])].reverse());
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
