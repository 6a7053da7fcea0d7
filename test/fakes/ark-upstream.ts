import type { ServerResponse } from 'node:http';
import { setTimeout as delay } from 'node:timers/promises';
import sharp from 'sharp';
import { RecordingUpstream, sendBytes, sendJson, type RecordedRequest } from './recording-upstream.ts';
import { sampleMp4 } from './upstream-media.ts';

/** Size of the fake's videos. */
export const VIDEO_SIZE = { width: 64, height: 36 };
/** Tokens the fake reports per video. */
export const VIDEO_TOKENS = 108_900;

const TASKS_PATH = '/api/v3/contents/generations/tasks';
const IMAGES_PATH = '/api/v3/images/generations';
/** Tokens the fake reports per image. */
export const IMAGE_TOKENS = 16_384;
const SEEDREAM_MODELS = ['doubao-seedream-4-0-250828', 'doubao-seedream-4-5-251128'];
const TIER_PIXELS: Record<string, string> = { '1K': '1024x1024', '2K': '2048x2048', '4K': '4096x4096' };

interface ArkTask {
  id: string;
  body: Record<string, unknown>;
  polls: number;
  createdAt: number;
}

/**
 * Volcengine Ark's content generation tasks as the SDK defines them: POST
 * /api/v3/contents/generations/tasks (Bearer key) answers `{id}`; GET …/tasks/{id} walks the task
 * through `statuses` and, on success, points content.video_url at an MP4 this server serves (with
 * an audio track when generate_audio was asked). Seedream images: POST /api/v3/images/generations
 * answers `{model, created, data: [{url, size}], usage}` at once, a group of max_images when
 * sequential_image_generation is auto, with the items of `imageFailures` as `{error}` (a group's
 * partial failure, still 200); the URLs serve JPEGs of the requested size. Errors use Ark's
 * `{error: {code, message}}`. Records every request.
 */
export class ArkUpstream extends RecordingUpstream {
  statuses = ['queued', 'running', 'succeeded'];
  holding = false;
  failure = { code: 'OutputVideoSensitiveContentDetected', message: 'The request failed because the output video may contain sensitive information. Request id: 021746' };
  /** HTTP statuses answered to the next create calls before one is accepted. */
  createErrors: number[] = [];
  readonly tasks = new Map<string, ArkTask>();
  /** Indexes of a group's images answered as failed items. */
  imageFailures: number[] = [];
  /** Images requests are left unanswered while true (a slow generation). */
  holdingImages = false;
  /** Images requests are answered this long after they arrive (a generation that takes a while). */
  imageDelayMs = 0;
  /** Images made, by id: their pixel size. */
  readonly images = new Map<string, string>();

  readonly apiKey: string;

  private constructor(apiKey: string) {
    super();
    this.apiKey = apiKey;
  }

  static start(apiKey: string): Promise<ArkUpstream> {
    return new ArkUpstream(apiKey).listen();
  }

  /** Task creations received. */
  get creates(): RecordedRequest[] {
    return this.requests.filter((r) => r.method === 'POST' && r.path === TASKS_PATH);
  }

  /** Task queries received. */
  get queries(): RecordedRequest[] {
    return this.requests.filter((r) => r.method === 'GET' && r.path.startsWith(`${TASKS_PATH}/`));
  }

  /** Images requests received. */
  get imageRequests(): RecordedRequest[] {
    return this.requests.filter((r) => r.method === 'POST' && r.path === IMAGES_PATH);
  }

  protected async handle(req: RecordedRequest, res: ServerResponse): Promise<void> {
    if (req.path.startsWith('/tos/img/')) return this.serveImage(req, res);
    if (req.path.startsWith('/tos/')) return this.serveVideo(req, res);
    if (req.headers.authorization !== `Bearer ${this.apiKey}`) {
      return sendJson(res, 401, { error: { code: 'AuthenticationError', message: 'the API key or AK/SK in the request is missing or invalid. Request id: 021747', param: '', type: 'Unauthorized' } });
    }
    if (req.method === 'POST' && req.path === TASKS_PATH) return this.create(req, res);
    if (req.method === 'POST' && req.path === IMAGES_PATH) {
      if (this.imageDelayMs > 0) await delay(this.imageDelayMs);
      return this.generateImages(req, res);
    }
    const id = req.method === 'GET' && req.path.startsWith(`${TASKS_PATH}/`) ? decodeURIComponent(req.path.slice(TASKS_PATH.length + 1)) : undefined;
    const task = id ? this.tasks.get(id) : undefined;
    if (!task) return sendJson(res, 404, { error: { code: 'ResourceNotFound', message: `the task ${id} does not exist`, param: 'id', type: 'NotFound' } });
    const status = this.holding ? 'queued' : this.statuses[Math.min(task.polls, this.statuses.length - 1)]!;
    if (!this.holding) task.polls++;
    sendJson(res, 200, this.taskObject(task, status));
  }

  private create(req: RecordedRequest, res: ServerResponse): void {
    const status = this.createErrors.shift();
    if (status !== undefined) {
      return sendJson(res, status, { error: { code: status === 429 ? 'RateLimitExceeded.EndpointRPMExceeded' : 'InternalServiceError', message: 'try again later', param: '', type: status === 429 ? 'TooManyRequests' : 'InternalServerError' } });
    }
    const body = req.json as Record<string, unknown> | undefined;
    if (typeof body?.model !== 'string' || !Array.isArray(body.content) || body.content.length === 0) {
      return sendJson(res, 400, { error: { code: 'MissingParameter', message: 'the request is missing model or content', param: 'content', type: 'BadRequest' } });
    }
    const id = `cgt-20250507173314-${(this.tasks.size + 1).toString(36).padStart(5, 'x')}`;
    this.tasks.set(id, { id, body, polls: 0, createdAt: Math.floor(Date.now() / 1000) });
    sendJson(res, 200, { id });
  }

  private taskObject(task: ArkTask, status: string): Record<string, unknown> {
    const b = task.body;
    return {
      id: task.id,
      model: b.model,
      status,
      error: status === 'failed' ? this.failure : null,
      ...(status === 'succeeded' ? {
        content: { video_url: `${this.url}/tos/${task.id}.mp4?X-Tos-Expires=86400&X-Tos-Signature=abc` },
        usage: { completion_tokens: VIDEO_TOKENS, total_tokens: VIDEO_TOKENS },
      } : {}),
      created_at: task.createdAt,
      updated_at: Math.floor(Date.now() / 1000),
      seed: typeof b.seed === 'number' && b.seed >= 0 ? b.seed : 58_913,
      resolution: b.resolution ?? '720p',
      ratio: b.ratio ?? '16:9',
      duration: b.duration ?? 5,
      framespersecond: b.framespersecond ?? 24,
      service_tier: 'default',
      execution_expires_after: 172_800,
    };
  }

  private async serveVideo(req: RecordedRequest, res: ServerResponse): Promise<void> {
    const task = this.tasks.get(req.path.slice('/tos/'.length).replace(/\.mp4$/, ''));
    if (!task || req.query['X-Tos-Signature'] !== 'abc') return sendJson(res, 403, { error: 'AccessDenied' });
    sendBytes(res, await sampleMp4({ ...VIDEO_SIZE, seconds: 1, audio: task.body.generate_audio === true }), 'video/mp4');
  }

  private generateImages(req: RecordedRequest, res: ServerResponse): void {
    if (this.holdingImages) return;
    const status = this.createErrors.shift();
    if (status !== undefined) return sendJson(res, status, { error: { code: status === 429 ? 'ServerOverloaded' : 'InternalServiceError', message: 'try again later', param: '', type: 'TooManyRequests' } });
    const b = (req.json ?? {}) as Record<string, unknown>;
    const invalid = (param: string, message: string) => sendJson(res, 400, { error: { code: 'InvalidParameter', message: `the parameter \`${param}\` specified in the request is not valid: ${message}. Request id: 021758`, param, type: 'BadRequest' } });
    if (!SEEDREAM_MODELS.includes(String(b.model))) return sendJson(res, 404, { error: { code: 'InvalidEndpointOrModel.NotFound', message: `the model ${String(b.model)} does not exist`, param: 'model', type: 'NotFound' } });
    if (typeof b.prompt !== 'string' || b.prompt === '') return sendJson(res, 400, { error: { code: 'MissingParameter', message: 'the request is missing prompt', param: 'prompt', type: 'BadRequest' } });
    const references = b.image === undefined ? [] : Array.isArray(b.image) ? b.image : [b.image];
    if (references.length > 14 || references.some((r) => typeof r !== 'string' || !/^(https?:\/\/|data:image\/[a-z]+;base64,)/.test(r))) return invalid('image', 'one to 14 URLs or data:image/<format>;base64 URIs');
    const size = b.size === undefined ? '2048x2048' : TIER_PIXELS[String(b.size)] ?? String(b.size);
    if (!/^\d+x\d+$/.test(size)) return invalid('size', 'a tier or WxH');
    if (b.sequential_image_generation !== undefined && b.sequential_image_generation !== 'auto' && b.sequential_image_generation !== 'disabled') return invalid('sequential_image_generation', 'auto or disabled');
    const group = b.sequential_image_generation === 'auto' ? Number((b.sequential_image_generation_options as { max_images?: unknown } | undefined)?.max_images ?? 15) : 1;
    if (references.length + group > 15) return invalid('sequential_image_generation_options.max_images', 'reference and generated images are at most 15');
    if (b.response_format !== undefined && b.response_format !== 'url') return invalid('response_format', 'the fake answers url only');
    const data = Array.from({ length: group }, (_, i) => {
      if (this.imageFailures.includes(i)) return { error: { code: 'OutputImageSensitiveContentDetected', message: 'The request failed because the output image may contain sensitive information.' } };
      const id = `img-${this.images.size + 1}`;
      this.images.set(id, size);
      return { url: `${this.url}/tos/img/${id}.jpeg?X-Tos-Signature=abc`, size };
    });
    const made = data.filter((d) => 'url' in d).length;
    sendJson(res, 200, { model: b.model, created: Math.floor(Date.now() / 1000), data, usage: { generated_images: made, output_tokens: made * IMAGE_TOKENS, total_tokens: made * IMAGE_TOKENS } });
  }

  private async serveImage(req: RecordedRequest, res: ServerResponse): Promise<void> {
    const size = this.images.get(req.path.slice('/tos/img/'.length).replace(/\.jpeg$/, ''));
    if (!size || req.query['X-Tos-Signature'] !== 'abc') return sendJson(res, 403, { error: 'AccessDenied' });
    const [width, height] = size.split('x').map(Number) as [number, number];
    sendBytes(res, await sharp({ create: { width, height, channels: 3, background: '#20a060' } }).jpeg().toBuffer(), 'image/jpeg');
  }
}
