/**
 * A fake Hyper3D Rodin API: Bearer key, POST /rodin as
 * multipart (booleans as strings, repeated `images` parts), 201 with `uuid` and
 * `jobs.subscription_key` (or an `error` inside the 201), POST /status with per-job
 * Waiting/Generating/Done/Failed, POST /download listing the model and preview.webp.
 */
import { randomUUID } from 'node:crypto';
import { ReplyingUpstream, type RecordedRequest, type Reply } from './recording-upstream.ts';
import { sampleGlb, samplePicture } from './upstream-media.ts';

export const RODIN_KEY = 'rodin-test-key';

export interface RodinPlan {
  outcome: 'success' | 'failed' | 'no_credits' | 'stall';
  /** Status polls answered Generating before the jobs are Done. */
  runningPolls?: number;
}

/** A received multipart submit: text fields in order, and the uploaded images. */
export interface RodinSubmit {
  fields: [string, string][];
  images: { name: string; type: string; size: number }[];
}

interface FakeTask {
  uuid: string;
  subscriptionKey: string;
  plan: RodinPlan;
  polls: number;
  format: string;
}

const TIERS = new Set(['Sketch', 'Regular', 'Detail', 'Smooth', 'Gen-2', 'Gen-2.5-Extreme-Low', 'Gen-2.5-Low', 'Gen-2.5-Medium', 'Gen-2.5-High', 'Gen-2.5-Extreme-High']);

export class FakeRodin extends ReplyingUpstream {
  readonly submits: RodinSubmit[] = [];
  readonly tasks = new Map<string, FakeTask>();
  plans: RodinPlan[] = [{ outcome: 'success', runningPolls: 1 }];

  static start(): Promise<FakeRodin> {
    return new FakeRodin().listen();
  }

  get baseUrl(): string {
    return `${this.url}/api/v2`;
  }

  finish(uuid: string): void {
    const task = this.tasks.get(uuid);
    if (task) task.plan = { outcome: 'success', runningPolls: 0 };
  }

  protected async route(req: RecordedRequest): Promise<Reply | Buffer> {
    if (req.path.startsWith('/files/')) return req.path.endsWith('.webp') ? samplePicture('webp') : req.path.endsWith('.glb') ? sampleGlb(['rodin']) : Buffer.from(req.path);
    if (req.headers.authorization !== `Bearer ${RODIN_KEY}`) return { status: 401, body: { error: 'UNAUTHORIZED', message: 'invalid api key' } };
    if (req.method === 'POST' && req.path === '/api/v2/rodin') return this.submit(req);
    if (req.method === 'POST' && req.path === '/api/v2/status') return this.status((req.json ?? {}) as { subscription_key?: string });
    if (req.method === 'POST' && req.path === '/api/v2/download') return this.download((req.json ?? {}) as { task_uuid?: string });
    return { status: 404, body: { error: 'NOT_FOUND' } };
  }

  private submit(req: RecordedRequest): Reply {
    if (!String(req.headers['content-type']).startsWith('multipart/form-data')) return { status: 400, body: { error: 'INVALID_REQUEST', message: 'multipart/form-data only' } };
    const submit: RodinSubmit = {
      fields: req.fields ?? [],
      images: (req.files ?? []).filter((f) => f.field === 'images').map((f) => ({ name: f.fileName, type: f.type, size: f.data.length })),
    };
    this.submits.push(submit);
    const field = (name: string) => submit.fields.find(([n]) => n === name)?.[1];
    if (!field('prompt') && submit.images.length === 0) return { status: 400, body: { error: 'INVALID_REQUEST', message: 'prompt or images required' } };
    if (field('tier') && !TIERS.has(field('tier')!)) return { status: 400, body: { error: 'INVALID_REQUEST', message: `unknown tier ${field('tier')}` } };
    if (field('mesh_mode') === 'Raw' && field('addons')) return { status: 400, body: { error: 'INVALID_REQUEST', message: 'addons are not available in Raw mode' } };
    if (submit.images.length > 5) return { status: 400, body: { error: 'INVALID_REQUEST', message: 'at most 5 images' } };
    const plan = this.plans.length > 1 ? this.plans.shift()! : this.plans[0]!;
    if (plan.outcome === 'no_credits') return { status: 201, body: { error: 'NO_ENOUGH_CREDITS', message: 'Insufficient credits to submit the job.' } };
    const uuid = randomUUID();
    const subscriptionKey = `sub-${randomUUID()}`;
    this.tasks.set(uuid, { uuid, subscriptionKey, plan, polls: 0, format: field('geometry_file_format') ?? 'glb' });
    return { status: 201, body: { error: null, message: 'Submitted.', uuid, jobs: { uuids: [randomUUID(), randomUUID()], subscription_key: subscriptionKey }, submit_time: new Date().toISOString() } };
  }

  private status(body: { subscription_key?: string }): Reply {
    const task = [...this.tasks.values()].find((t) => t.subscriptionKey === body.subscription_key);
    if (!task) return { status: 404, body: { error: 'NOT_FOUND', message: 'unknown subscription key' } };
    task.polls++;
    const running = task.plan.outcome === 'stall' || task.polls <= (task.plan.runningPolls ?? 0);
    const statuses = running ? ['Done', 'Generating'] : task.plan.outcome === 'failed' ? ['Done', 'Failed'] : ['Done', 'Done'];
    return { status: 200, body: { error: null, jobs: statuses.map((status) => ({ uuid: randomUUID(), status })) } };
  }

  private download(body: { task_uuid?: string }): Reply {
    const task = this.tasks.get(String(body.task_uuid));
    if (!task) return { status: 404, body: { error: 'NOT_FOUND', message: 'unknown task' } };
    const url = (name: string) => `${this.url}/files/${task.uuid}/${name}`;
    return { status: 200, body: { error: null, list: [{ url: url('preview.webp'), name: 'preview.webp' }, { url: url(`base_basic_pbr.${task.format}`), name: `base_basic_pbr.${task.format}` }] } };
  }
}
