/**
 * A fake fal.ai queue hosting Tripo: `Authorization: Key …`,
 * POST /{endpoint id} answering request_id with status/response/cancel URLs under the shorter
 * `{owner}/{app}` path, GET …/requests/{id}/status (IN_QUEUE, IN_PROGRESS, COMPLETED), GET
 * …/requests/{id} with model_mesh, model_urls and rendered_image; 422 with `detail` for bad input.
 */
import { randomUUID } from 'node:crypto';
import { ReplyingUpstream, type RecordedRequest, type Reply } from './recording-upstream.ts';
import { sampleGlb, samplePicture } from './upstream-media.ts';

export const FAL_KEY = 'fal-key-id:fal-key-secret';

export interface FalPlan {
  outcome: 'success' | 'failed' | 'stall';
  runningPolls?: number;
  error?: string;
}

interface FakeRequest {
  id: string;
  endpoint: string;
  app: string;
  input: Record<string, unknown>;
  plan: FalPlan;
  polls: number;
}

/** Inputs each hosted endpoint takes (extra fields are refused as fal's validation does). */
const ENDPOINTS: Record<string, string[]> = {
  'tripo3d/h3.1/text-to-3d': ['prompt', 'texture', 'pbr', 'texture_quality', 'geometry_quality'],
  'tripo3d/h3.1/image-to-3d': ['image_url', 'texture', 'pbr', 'texture_quality', 'geometry_quality'],
  'tripo3d/h3.1/multiview-to-3d': ['image_urls', 'texture', 'pbr', 'texture_quality', 'geometry_quality'],
  'tripo3d/p1/text-to-3d': ['prompt', 'face_limit', 'texture', 'pbr', 'texture_quality', 'model_seed'],
  'tripo3d/p1/image-to-3d': ['image_url', 'face_limit', 'texture', 'pbr', 'texture_quality', 'model_seed'],
  'tripo3d/p1/multiview-to-3d': ['image_urls', 'face_limit', 'texture', 'pbr', 'texture_quality', 'model_seed'],
};

export class FakeFal extends ReplyingUpstream {
  readonly queue = new Map<string, FakeRequest>();
  plans: FalPlan[] = [{ outcome: 'success', runningPolls: 1 }];

  static start(): Promise<FakeFal> {
    return new FakeFal().listen();
  }

  /** Submits received: endpoint id and input. */
  get submits(): { endpoint: string; input: any }[] { // eslint-disable-line @typescript-eslint/no-explicit-any
    return this.requests.filter((r) => r.method === 'POST' && ENDPOINTS[r.path.slice(1)]).map((r) => ({ endpoint: r.path.slice(1), input: r.json }));
  }

  finish(id: string): void {
    const request = this.queue.get(id);
    if (request) request.plan = { outcome: 'success', runningPolls: 0 };
  }

  protected async route(req: RecordedRequest): Promise<Reply | Buffer> {
    if (req.path.startsWith('/cdn/')) return req.path.endsWith('.webp') ? samplePicture('webp') : sampleGlb(['fal']);
    if (req.headers.authorization !== `Key ${FAL_KEY}`) return { status: 401, body: { detail: 'No user found for Key ID and Secret' } };
    const endpoint = req.path.slice(1);
    if (req.method === 'POST' && ENDPOINTS[endpoint]) return this.submit(endpoint, (req.json ?? {}) as Record<string, unknown>);
    const m = /^\/([^/]+\/[^/]+)\/requests\/([^/]+)(\/status)?$/.exec(req.path);
    const request = m ? this.queue.get(m[2]!) : undefined;
    if (!m || !request || request.app !== m[1] || req.method !== 'GET') return { status: 404, body: { detail: 'Request not found' } };
    return m[3] ? this.status(request) : this.result(request);
  }

  private submit(endpoint: string, input: Record<string, unknown>): Reply {
    const allowed = ENDPOINTS[endpoint]!;
    const extra = Object.keys(input).filter((k) => !allowed.includes(k));
    if (extra.length > 0) return { status: 422, body: { detail: extra.map((k) => ({ loc: ['body', k], msg: 'extra fields not permitted', type: 'value_error.extra' })) } };
    if (endpoint.endsWith('multiview-to-3d') && (!Array.isArray(input.image_urls) || input.image_urls.length !== 4)) {
      return { status: 422, body: { detail: [{ loc: ['body', 'image_urls'], msg: 'exactly 4 images are required', type: 'value_error' }] } };
    }
    if (input.geometry_quality !== undefined && !['standard', 'ultra'].includes(String(input.geometry_quality))) {
      return { status: 422, body: { detail: [{ loc: ['body', 'geometry_quality'], msg: "value is not a valid enumeration member; permitted: 'standard', 'ultra'", type: 'type_error.enum' }] } };
    }
    const id = randomUUID();
    const app = endpoint.split('/').slice(0, 2).join('/');
    const plan = this.plans.length > 1 ? this.plans.shift()! : this.plans[0]!;
    this.queue.set(id, { id, endpoint, app, input, plan, polls: 0 });
    const base = `${this.url}/${app}/requests/${id}`;
    return { status: 200, body: { request_id: id, response_url: base, status_url: `${base}/status`, cancel_url: `${base}/cancel`, queue_position: 0 } };
  }

  private status(request: FakeRequest): Reply {
    request.polls++;
    const base = `${this.url}/${request.app}/requests/${request.id}`;
    if (request.plan.outcome === 'stall' || request.polls <= (request.plan.runningPolls ?? 0)) {
      return { status: 202, body: request.polls === 1 ? { status: 'IN_QUEUE', queue_position: 0, response_url: base } : { status: 'IN_PROGRESS', response_url: base, logs: null } };
    }
    if (request.plan.outcome === 'failed') return { status: 200, body: { status: 'COMPLETED', response_url: base, error: request.plan.error ?? 'generation failed', error_type: 'generation_error' } };
    return { status: 200, body: { status: 'COMPLETED', response_url: base, logs: null, metrics: { inference_time: 12.5 } } };
  }

  private result(request: FakeRequest): Reply {
    if (request.plan.outcome === 'failed') return { status: 422, body: { detail: request.plan.error ?? 'generation failed' } };
    const cdn = (name: string) => `${this.url}/cdn/files/${request.id}/${name}`;
    const file = (name: string, type: string) => ({ url: cdn(name), content_type: type, file_name: name, file_size: 1234 });
    const textured = request.input.texture !== false;
    return {
      status: 200,
      body: {
        model_mesh: file('tripo_model.glb', 'model/gltf-binary'),
        model_urls: {
          glb: file('tripo_model.glb', 'model/gltf-binary'),
          ...(textured && request.input.pbr === true ? { pbr_model: file('tripo_pbr_model.glb', 'model/gltf-binary') } : {}),
          ...(textured ? { base_model: file('tripo_base_model.glb', 'model/gltf-binary') } : {}),
        },
        rendered_image: file('tripo_render.webp', 'image/webp'),
        task_id: randomUUID(),
      },
    };
  }
}
