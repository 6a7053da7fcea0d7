/**
 * A fake Tripo V2 OpenAPI: Bearer tsk_ keys, the
 * `{code, data}` envelope, POST /task with the task types and version strings, GET /task/{id}
 * with queued/running/success/failed states, output URLs (plus the `result` objects), STS upload
 * to an S3 path whose SigV4 signature it checks, and import_model. Records every request.
 */
import { createHash, createHmac, randomUUID } from 'node:crypto';
import { ReplyingUpstream, type RecordedRequest, type Reply } from './recording-upstream.ts';
import { sampleGlb, samplePicture } from './upstream-media.ts';

export const TRIPO_KEY = 'tsk_test_key';

/** What a submitted task does: finish after `runningPolls` polls, fail with a Tripo error, or keep running. */
export interface TripoPlan {
  outcome: 'success' | 'failed' | 'banned' | 'stall';
  runningPolls?: number;
  errorCode?: number;
  errorMsg?: string;
}

interface FakeTask {
  id: string;
  body: Record<string, unknown>;
  plan: TripoPlan;
  polls: number;
}

const VERSIONS = new Set([
  'Turbo-v1.0-20250506', 'v3.1-20260211', 'v3.0-20250812', 'v2.5-20250123', 'v2.0-20240919', 'v1.4-20240625', 'P1-20260311',
  'v1.0-20250506', 'P-v2.0-20251225', 'v1.0-20240301', 'v2.0-20250506', 'v2.5-20260210',
]);
const P1_REFUSED = ['quad', 'smart_low_poly', 'generate_parts', 'geometry_quality'];
/** Source task types each edit accepts (Tripo's docs). */
const ORIGINAL_TYPES: Record<string, string[]> = {
  mesh_completion: ['mesh_segmentation'],
  animate_retarget: ['animate_rig'],
};
export const SEGMENT_PARTS = ['head', 'torso', 'legs'];

function envelope(status: number, code: number, message: string): Reply {
  return { status, body: { code, message, suggestion: 'check the request' }, headers: { 'x-tripo-trace-id': randomUUID() } };
}

const ok = (data: unknown): Reply => ({ status: 200, body: { code: 0, data }, headers: { 'x-tripo-trace-id': randomUUID() } });

const sha256 = (data: string | Buffer) => createHash('sha256').update(data).digest('hex');

export class FakeTripo extends ReplyingUpstream {
  readonly tasks = new Map<string, FakeTask>();
  /** Objects uploaded to the fake S3, by key. */
  readonly objects = new Map<string, Buffer>();
  /** The plan of the next submitted tasks (each takes the head; the last stays). */
  plans: TripoPlan[] = [{ outcome: 'success', runningPolls: 1 }];
  private sts?: { ak: string; sk: string; token: string };

  static start(): Promise<FakeTripo> {
    return new FakeTripo().listen();
  }

  /** The base URL to configure (the `/v2/openapi` prefix of the real service). */
  get baseUrl(): string {
    return `${this.url}/v2/openapi`;
  }

  /** Bodies of POST /task, in order. */
  get submits(): Record<string, unknown>[] {
    return this.requests.filter((r) => r.method === 'POST' && r.path === '/v2/openapi/task').map((r) => r.json as Record<string, unknown>);
  }

  /** Lets a stalled task finish successfully. */
  finish(taskId: string): void {
    const task = this.tasks.get(taskId);
    if (task) task.plan = { outcome: 'success', runningPolls: 0 };
  }

  protected async route(req: RecordedRequest): Promise<Reply | Buffer> {
    if (req.path.startsWith('/files/')) return this.file(req.path);
    if (req.path.startsWith('/s3/')) return this.s3Put(req);
    if (req.headers.authorization !== `Bearer ${TRIPO_KEY}`) return envelope(401, 1002, 'Authentication failed');
    if (req.method === 'POST' && req.path === '/v2/openapi/task') return this.create((req.json ?? {}) as Record<string, unknown>);
    const get = /^\/v2\/openapi\/task\/([^/]+)$/.exec(req.path);
    if (req.method === 'GET' && get) return this.read(decodeURIComponent(get[1]!));
    if (req.method === 'POST' && req.path === '/v2/openapi/upload/sts/token') return this.stsToken((req.json ?? {}) as Record<string, unknown>);
    return envelope(404, 1004, `no route ${req.method} ${req.path}`);
  }

  private create(body: Record<string, unknown>): Reply {
    const type = body.type;
    if (typeof type !== 'string') return envelope(400, 1003, 'The request body is malformed');
    if (body.model_version !== undefined && !VERSIONS.has(String(body.model_version))) return envelope(400, 2017, 'The version value is invalid');
    if (body.model_version === 'P1-20260311') {
      const refused = P1_REFUSED.find((f) => f in body);
      if (refused) return envelope(400, 1004, `${refused} is not supported by P1`);
    }
    if (type === 'multiview_to_model' && (!Array.isArray(body.files) || body.files.length !== 4)) return envelope(400, 1004, 'files with exactly 4 items are required for multiview_to_model');
    if (type === 'import_model') {
      const key = (body.file as { object?: { key?: string } } | undefined)?.object?.key;
      if (!key || !this.objects.has(key)) return envelope(404, 2019, 'File not found.');
    }
    const original = body.original_model_task_id ?? body.draft_model_task_id;
    if (original !== undefined) {
      const source = this.tasks.get(String(original));
      if (!source) return envelope(404, 2001, 'The task is not found');
      const allowed = ORIGINAL_TYPES[type];
      if (allowed && !allowed.includes(String(source.body.type))) return envelope(400, 2006, 'The type of the original task is invalid');
    }
    const id = randomUUID();
    const plan = this.plans.length > 1 ? this.plans.shift()! : this.plans[0]!;
    this.tasks.set(id, { id, body, plan, polls: 0 });
    return ok({ task_id: id });
  }

  private read(id: string): Reply {
    const task = this.tasks.get(id);
    if (!task) return envelope(404, 2001, 'The task is not found');
    task.polls++;
    const base = { task_id: id, type: task.body.type, input: task.body, create_time: 1_700_000_000 };
    const { plan } = task;
    if (plan.outcome === 'stall' || task.polls <= (plan.runningPolls ?? 0)) {
      return ok({ ...base, status: task.polls === 1 ? 'queued' : 'running', progress: plan.outcome === 'stall' ? 30 : 50, output: {}, running_left_time: 10, queuing_num: 0 });
    }
    if (plan.outcome !== 'success') {
      return ok({ ...base, status: plan.outcome, progress: 100, output: {}, result: {}, error_code: plan.errorCode ?? 1001, error_msg: plan.errorMsg ?? 'generation failed', queuing_num: -1, running_left_time: -1 });
    }
    const output = this.outputOf(task);
    const result = Object.fromEntries(Object.entries(output).filter(([, v]) => typeof v === 'string').map(([k, v]) => [k, { type: String(v).split('.').pop(), url: v }]));
    return ok({ ...base, status: 'success', progress: 100, output, result, consumed_credit: 20 });
  }

  /** Result URLs as Tripo gives them: one per role, named with their format. */
  private outputOf(task: FakeTask): Record<string, unknown> {
    const url = (name: string) => `${this.url}/files/${task.id}/${name}?Expires=300&Signature=x`;
    const body = task.body;
    switch (body.type) {
      case 'animate_prerigcheck':
        return { riggable: true, rig_type: 'biped' };
      case 'convert_model':
        return { model: url(`converted.${String(body.format).toLowerCase()}`) };
      case 'stylize_model':
        return { model: url(body.style === 'minecraft' ? 'model.schem' : 'stylized.glb') };
      case 'animate_rig':
      case 'animate_retarget':
        return { model: url(`animated.${String(body.out_format ?? 'glb')}`) };
      case 'text_to_model':
      case 'image_to_model':
      case 'multiview_to_model': {
        const textured = body.texture !== false;
        return {
          model: url(textured ? 'pbr_model.glb' : 'base.glb'),
          ...(textured ? { base_model: url('base.glb') } : {}),
          ...(textured && body.pbr !== false ? { pbr_model: url('pbr_model.glb') } : {}),
          rendered_image: url('preview.webp'),
        };
      }
      default:
        return { model: url('model.glb'), rendered_image: url('preview.webp') };
    }
  }

  private async file(path: string): Promise<Buffer | Reply> {
    const [, , id, name] = path.split('/');
    const task = this.tasks.get(id!);
    if (!task) return { status: 404, body: 'NoSuchKey' };
    if (name!.endsWith('.webp')) return samplePicture('webp');
    if (name!.endsWith('.glb')) return sampleGlb(task.body.type === 'mesh_segmentation' || task.body.type === 'mesh_completion' ? SEGMENT_PARTS : ['body']);
    if (name!.endsWith('.fbx')) return Buffer.concat([Buffer.from('Kaydara FBX Binary  \0'), Buffer.alloc(64)]);
    return Buffer.from(`${name} of ${id}`);
  }

  private stsToken(body: Record<string, unknown>): Reply {
    if (!['webp', 'jpeg', 'png', 'glb', 'obj', 'fbx', 'stl'].includes(String(body.format))) return envelope(400, 1004, 'One or more of your parameter is invalid.');
    this.sts = { ak: `ASIA${randomUUID().slice(0, 8)}`, sk: randomUUID(), token: randomUUID() };
    return ok({
      s3_host: `${this.url}/s3`,
      resource_bucket: 'tripo-data',
      resource_uri: `tcli_test/20260101/${randomUUID()}/input.${String(body.format)}`,
      session_token: this.sts.token,
      sts_ak: this.sts.ak,
      sts_sk: this.sts.sk,
    });
  }

  /** PUT /s3/<bucket>/<key>: stored only when its SigV4 signature matches the STS secret handed out. */
  private s3Put(req: RecordedRequest): Reply {
    const auth = /^AWS4-HMAC-SHA256 Credential=([^/]+)\/(\d{8})\/([^/]+)\/s3\/aws4_request, SignedHeaders=([^,]+), Signature=([0-9a-f]{64})$/.exec(String(req.headers.authorization ?? ''));
    if (req.method !== 'PUT' || !auth || !this.sts || auth[1] !== this.sts.ak) return { status: 403, body: 'AccessDenied' };
    if (req.headers['x-amz-security-token'] !== this.sts.token || req.headers['x-amz-content-sha256'] !== sha256(req.body)) return { status: 403, body: 'AccessDenied' };
    const [, , date, region, signedHeaders, signature] = auth;
    const names = signedHeaders!.split(';');
    const canonical = ['PUT', req.path, '', ...names.map((h) => `${h}:${String(req.headers[h]).trim()}`), '', signedHeaders, req.headers['x-amz-content-sha256']].join('\n');
    const toSign = ['AWS4-HMAC-SHA256', req.headers['x-amz-date'], `${date}/${region}/s3/aws4_request`, sha256(canonical)].join('\n');
    const h = (key: string | Buffer, data: string) => createHmac('sha256', key).update(data).digest();
    const expected = createHmac('sha256', h(h(h(h(`AWS4${this.sts.sk}`, date!), region!), 's3'), 'aws4_request')).update(toSign).digest('hex');
    if (expected !== signature) return { status: 403, body: 'SignatureDoesNotMatch' };
    const key = decodeURIComponent(req.path.split('/').slice(3).join('/'));
    this.objects.set(key, req.body);
    return { status: 200, body: '' };
  }
}
