import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { setTimeout as delay } from 'node:timers/promises';
import sharp from 'sharp';
import { transition, type TaskState } from '../src/core/task-state.ts';
import type { EngineRegistry } from '../src/providers/registry.ts';
import { LocalEngine } from '../src/providers/local/local-engine.ts';
import { TaskRejectedError, type GenerationEngine, type GenerationJob, type RunContext } from '../src/providers/spec.ts';
import type { TaskStatusEvent } from '../src/storage/event-bus.ts';
import { redisEnv, startTestServer, tempDataDir, type TestServer } from './support/server.ts';
import { runContext } from './support/run-context.ts';

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = any;

const IMAGE = { prompt: 'a red fox', model: 'seedream-4.0', size: '64x48' };

/** Waits until `predicate` holds for the task's record, reading it over HTTP; bounded. */
async function waitForRecord(srv: TestServer, token: string, taskId: string, predicate: (r: Json) => boolean, timeoutMs = 10_000): Promise<Json> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const res = await srv.fetch(`/v1/ai/result/${taskId}`, { token });
    const record = await res.json();
    if (res.status === 200 && predicate(record)) return record;
    if (Date.now() > deadline) throw new Error(`task ${taskId} never matched; last: ${JSON.stringify(record)}`);
    await delay(20);
  }
}

/** Collects the task.status events of the server's bus, to await and inspect them. */
function recordEvents(srv: TestServer) {
  const events: TaskStatusEvent[] = [];
  const waiters: (() => void)[] = [];
  srv.server.services.bus.subscribe('task.status', (e) => {
    events.push(e);
    for (const w of waiters.splice(0)) w();
  });
  const of = (taskId: string) => events.filter((e) => e.taskId === taskId);
  return {
    of,
    async until(predicate: () => boolean, timeoutMs = 10_000): Promise<void> {
      const deadline = Date.now() + timeoutMs;
      while (!predicate()) {
        if (Date.now() > deadline) throw new Error('timed out waiting for task events');
        await Promise.race([new Promise<void>((r) => waiters.push(r)), delay(100)]);
      }
    },
  };
}

function submit(srv: TestServer, token: string, body: Json, headers: Record<string, string> = {}): Promise<Response> {
  return srv.fetch('/v1/images/generations', { method: 'POST', token, json: body, headers });
}

describe('task state machine', () => {
  const base: TaskState = { status: 'submitted', progress: 0, message: null, errorMessage: null, startedAt: null, finishedAt: null };

  it('allows the contract transitions and nothing out of a terminal state', () => {
    const started = transition(base, { status: 'started' }, 10);
    assert.ok(started.ok && started.next.startedAt === 10);
    assert.equal(transition(base, { status: 'process' }, 1).ok, false, 'submitted cannot jump to process');
    assert.equal(transition(base, { status: 'success' }, 1).ok, false, 'submitted cannot jump to success');
    assert.ok(transition(base, { status: 'rejected' }, 1).ok);
    for (const from of ['started', 'process'] as const) {
      assert.equal(transition({ ...base, status: from }, { status: 'rejected' }, 1).ok, false, `${from} cannot become rejected`);
      assert.ok(transition({ ...base, status: from }, { status: 'cancelled' }, 1).ok);
      assert.ok(transition({ ...base, status: from }, { status: 'failed' }, 1).ok);
    }
    for (const end of ['success', 'failed', 'rejected', 'cancelled'] as const) {
      for (const to of ['submitted', 'started', 'process', 'success', 'failed', 'rejected', 'cancelled'] as const) {
        const out = transition({ ...base, status: end }, { status: to }, 1);
        assert.deepEqual(out.ok ? 'moved' : out.reason, 'terminal', `${end} -> ${to}`);
      }
    }
  });

  it('never lowers progress and sets 100 and finished_at at success', () => {
    const at60 = transition({ ...base, status: 'process', progress: 60 }, { status: 'process', progress: 30 }, 5);
    assert.ok(at60.ok);
    assert.equal(at60.next.progress, 60);
    assert.equal(at60.changed, false);
    const done = transition({ ...base, status: 'process', progress: 60 }, { status: 'success' }, 7);
    assert.ok(done.ok);
    assert.equal(done.next.progress, 100);
    assert.equal(done.next.finishedAt, 7);
  });
});

describe('generation tasks on the local engine', () => {
  let srv: TestServer;
  let token: string;
  let other: string;
  let events: ReturnType<typeof recordEvents>;
  before(async () => {
    srv = await startTestServer({ LOCAL_ENGINE_MIN_DURATION_MS: '300' });
    token = await srv.tokenFor('painter');
    other = await srv.tokenFor('someone-else');
    events = recordEvents(srv);
  });
  after(() => srv.close());

  it('sync: waits and answers the task result with created and data, outputs served and registered', async () => {
    const res = await submit(srv, token, { ...IMAGE, n: 2 });
    assert.equal(res.status, 200);
    const body: Json = await res.json();
    assert.match(body.task_id, /^task_/);
    assert.equal(body.status, 'success');
    assert.equal(body.type, 'image');
    assert.equal(typeof body.request_id, 'string');
    assert.equal(body.output.length, 2);
    assert.deepEqual(body.data, body.output.map((url: string) => ({ url })));
    assert.equal(body.created, Math.floor(body.finished_at / 1000));
    assert.ok(body.started_at <= body.finished_at);
    assert.deepEqual(body.mediaSize, { type: 'image', width: 64, height: 48, status: 1 });
    assert.deepEqual(body.billings, [{
      billing_type: 'image',
      billing_model: { name: 'seedream-4.0', real_model: 'doubao-seedream-4-0-250828' },
      generateParams: { endpoint: 'images.generations' },
      platform: { name: 'Volcengine', id: 'volcengine', code: 'volcengine' },
      billing_params: { outputs: 2 },
      result: { token: 0 },
    }]);
    assert.equal(body.output_content[0].url, body.output[0]);

    const file = await fetch(body.output[0]);
    assert.equal(file.status, 200, 'output URLs need no token');
    assert.equal(file.headers.get('content-type'), 'image/png');
    const meta = await sharp(Buffer.from(await file.arrayBuffer())).metadata();
    assert.deepEqual([meta.width, meta.height], [64, 48]);

    const assets: Json = await (await srv.fetch('/api/assets?include_tags=output', { token })).json();
    const mine = assets.assets.filter((a: Json) => a.job_id === body.task_id);
    assert.equal(mine.length, 2, JSON.stringify(assets));
  });

  it('async: each header spelling answers the task id at once; other values wait', async () => {
    for (const [name, value] of [['x-async', 'true'], ['async', '1'], ['X-Async', 'TRUE']]) {
      const res = await submit(srv, token, IMAGE, { [name]: value });
      assert.equal(res.status, 200);
      const body: Json = await res.json();
      assert.deepEqual(Object.keys(body).sort(), ['request_id', 'status', 'task_id']);
      assert.equal(body.status, 'submitted');
      await waitForRecord(srv, token, body.task_id, (r) => r.queue_status.status === 'success');
    }
    const sync: Json = await (await submit(srv, token, IMAGE, { 'x-async': 'false' })).json();
    assert.equal(sync.status, 'success');
  });

  it('result: the full task status record, progress only rising, events persisted first', async () => {
    const { task_id } = await (await submit(srv, token, { ...IMAGE, seed: 7 }, { 'x-async': '1', 'x-request-id': 'req-trace-1' })).json() as Json;
    const record = await waitForRecord(srv, token, task_id, (r) => r.queue_status.status === 'success');
    assert.equal(record.queue_status.task_id, task_id);
    assert.equal(record.queue_status.request_id, 'req-trace-1');
    assert.equal(record.queue_status.progress, 100);
    assert.equal(record.queue_status.data.status, 'success');
    assert.equal(record.queue_status.output_content.length, 1);
    assert.equal(typeof record.queue_status.server, 'string');
    assert.deepEqual(record.user, { _id: 'painter' });
    assert.deepEqual(record.generate_info, {
      input: { prompt: IMAGE.prompt, size: IMAGE.size, seed: 7 },
      workflow: { _id: 'seedream-4.0' },
      // Without a providers config the built-in engine serves the model: its one channel is `local`.
      routing: { model: 'seedream-4.0', provider: 'volcengine', channel: 'local', attempts: [], warnings: [] },
    });
    assert.equal(record.billings.length, 1, 'a finished task carries its billing entry');
    assert.deepEqual(record.billings, record.queue_status.data.billings);

    await events.until(() => events.of(task_id).some((e) => e.status === 'success'));
    const seen = events.of(task_id);
    assert.deepEqual([...new Set(seen.map((e) => e.status))], ['submitted', 'started', 'process', 'success']);
    const progress = seen.map((e) => e.record.queue_status.progress);
    assert.deepEqual(progress, [...progress].sort((a, b) => a - b), 'progress never decreases');
    assert.deepEqual(seen.map((e) => e.version), seen.map((_, i) => i + 1), 'one event per stored version');
  });

  it('result and cancel of another user\'s or an unknown task answer 404', async () => {
    const { task_id } = await (await submit(srv, token, IMAGE, { 'x-async': '1' })).json() as Json;
    for (const path of [`/v1/ai/result/${task_id}`, `/v1/ai/cancel/${task_id}`, '/v1/ai/result/task_nope', '/v1/ai/cancel/task_nope']) {
      const res = await srv.fetch(path, { token: path.includes('nope') ? token : other });
      assert.equal(res.status, 404, path);
      const body: Json = await res.json();
      assert.equal(body.error.code, 'task_not_found');
      assert.equal(body.error.type, 'not_found_error');
    }
    assert.equal((await srv.fetch(`/v1/ai/result/${task_id}`)).status, 401);
  });

  it('validation: the field named, unknown model 404, wrong capability 400', async () => {
    const cases: [Json, number, string, string | null][] = [
      [{ model: 'seedream-4.0' }, 400, 'missing_parameter', 'prompt'],
      [{ prompt: 'x' }, 400, 'missing_parameter', 'model'],
      [{ ...IMAGE, n: 'two' }, 400, 'invalid_parameter', 'n'],
      [{ ...IMAGE, size: 'big' }, 400, 'invalid_parameter', 'size'],
      [{ ...IMAGE, resolution: '3K' }, 400, 'invalid_parameter', 'resolution'],
      [{ ...IMAGE, model: 'no-such-model' }, 404, 'model_not_found', 'model'],
    ];
    for (const [body, status, code, param] of cases) {
      const res = await submit(srv, token, body);
      const json: Json = await res.json();
      assert.equal(res.status, status, JSON.stringify(json));
      assert.equal(json.error.code, code, JSON.stringify(json));
      assert.equal(json.error.param, param);
    }
    const chatModel: Json = (await (await srv.fetch('/v1/models/list?type=text_generate', { token })).json()).modelList.find((m: Json) => !m.types.includes('image_generate'));
    const res = await submit(srv, token, { ...IMAGE, model: chatModel.name });
    assert.equal(res.status, 400);
    assert.equal(((await res.json()) as Json).error.code, 'model_capability_mismatch');
  });

  it('/metrics counts status changes by status and model and times ended tasks', async () => {
    const counted = async (): Promise<string> => (await srv.fetch('/metrics')).text();
    const valueOf = (text: string, series: string): number => Number(new RegExp(`^${series.replace(/[{}]/g, '\\$&')} (\\S+)$`, 'm').exec(text)?.[1] ?? 0);
    // A model no other test here uses, so background tasks of other tests cannot move these series.
    const success = 'gengate_task_status_changes_total{status="success",model="seedream-4.5"}';
    const ended = 'gengate_task_duration_seconds_count{status="success",model="seedream-4.5"}';
    const before = await counted();
    assert.equal(((await (await submit(srv, token, { ...IMAGE, model: 'seedream-4.5' })).json()) as Json).status, 'success');
    const after = await counted();
    assert.equal(valueOf(after, success) - valueOf(before, success), 1, after);
    assert.equal(valueOf(after, ended) - valueOf(before, ended), 1);
  });

  it('cancel of a finished task is 409 task_already_finished', async () => {
    const done: Json = await (await submit(srv, token, IMAGE)).json();
    const res = await srv.fetch(`/v1/ai/cancel/${done.task_id}`, { token });
    assert.equal(res.status, 409);
    const body: Json = await res.json();
    assert.equal(body.error.type, 'conflict_error');
    assert.equal(body.error.code, 'task_already_finished');
  });

  it('POST /v1/ai/generations: async always, default model, deprecation headers', async () => {
    const res = await srv.fetch('/v1/ai/generations', { method: 'POST', token, json: { params: { prompt: 'legacy', width: 32, height: 16, seed: 1, sampler: 'euler' }, options: { result_retrieval: 'websocket' } } });
    assert.equal(res.status, 200);
    assert.equal(res.headers.get('deprecation'), 'true');
    assert.equal(res.headers.get('link'), '</v1/images/generations>; rel="successor-version"');
    const body: Json = await res.json();
    assert.equal(body.status, 'submitted');
    const record = await waitForRecord(srv, token, body.task_id, (r) => r.queue_status.status === 'success');
    // The first enabled image model of the catalog.
    assert.equal(record.generate_info.workflow._id, 'gpt-image-1');
    assert.deepEqual(record.queue_status.data.mediaSize, { type: 'image', width: 32, height: 16, status: 1 });
    const bad = await srv.fetch('/v1/ai/generations', { method: 'POST', token, json: { prompt: 'no params' } });
    assert.equal(bad.status, 400);
    assert.equal(((await bad.json()) as Json).error.param, 'params');
  });
});

describe('sync timeout, disabled models and restarts', () => {
  it('cancel: a running task stops, ends cancelled and stays so; a second cancel is 409', async () => {
    // One worker and long runs: the next task can only start early if the cancelled run really stopped.
    const srv = await startTestServer({ LOCAL_ENGINE_MIN_DURATION_MS: '3000', WORKER_CONCURRENCY: '1' });
    const events = recordEvents(srv);
    try {
      const token = await srv.tokenFor('canceller');
      const { task_id } = await (await submit(srv, token, IMAGE, { 'x-async': '1' })).json() as Json;
      await waitForRecord(srv, token, task_id, (r) => r.queue_status.status === 'process');
      const res = await srv.fetch(`/v1/ai/cancel/${task_id}`, { token });
      assert.equal(res.status, 200);
      const record: Json = await res.json();
      assert.equal(record.queue_status.status, 'cancelled');
      const cancelledAt = Date.now();
      const again = await srv.fetch(`/v1/ai/cancel/${task_id}`, { token });
      assert.equal(again.status, 409);
      assert.equal(((await again.json()) as Json).error.code, 'task_already_finished');

      const { task_id: next } = await (await submit(srv, token, IMAGE, { 'x-async': '1' })).json() as Json;
      const nextRecord = await waitForRecord(srv, token, next, (r) => r.queue_status.status === 'success');
      assert.ok(nextRecord.queue_status.data.started_at - cancelledAt < 3000, 'the worker was free before the cancelled run would have ended');
      assert.equal((await waitForRecord(srv, token, task_id, () => true)).queue_status.status, 'cancelled');
      assert.deepEqual(events.of(task_id).filter((e) => ['success', 'failed', 'cancelled'].includes(e.status)).map((e) => e.status), ['cancelled']);
    } finally {
      await srv.close();
    }
  });

  it('past SYNC_TIMEOUT_MS answers 202 with the async body and the task still finishes', async () => {
    const srv = await startTestServer({ SYNC_TIMEOUT_MS: '100', LOCAL_ENGINE_MIN_DURATION_MS: '600' });
    try {
      const token = await srv.tokenFor('patient');
      const res = await submit(srv, token, IMAGE);
      assert.equal(res.status, 202);
      const body: Json = await res.json();
      assert.equal(body.status, 'submitted');
      await waitForRecord(srv, token, body.task_id, (r) => r.queue_status.status === 'success');
    } finally {
      await srv.close();
    }
  });

  it('a disabled model answers 400 model_disabled', async () => {
    const srv = await startTestServer({ GENGATE_CONFIG: JSON.stringify({ models: { 'seedream-4.0': { enabled: false, disabled_reason: 'maintenance' } } }) });
    try {
      const res = await submit(srv, await srv.tokenFor('u'), IMAGE);
      assert.equal(res.status, 400);
      const body: Json = await res.json();
      assert.equal(body.error.code, 'model_disabled');
      assert.match(body.error.message, /maintenance/);
    } finally {
      await srv.close();
    }
  });

  it('queued and running tasks survive a restart and finish', async () => {
    const dataDir = tempDataDir();
    const env = { DATA_DIR: dataDir, WORKER_CONCURRENCY: '1', LOCAL_ENGINE_MIN_DURATION_MS: '400' };
    let srv = await startTestServer(env);
    const token = await srv.tokenFor('restarter');
    const ids: string[] = [];
    for (let i = 0; i < 4; i++) ids.push(((await (await submit(srv, token, { ...IMAGE, seed: i }, { 'x-async': '1' })).json()) as Json).task_id);
    await waitForRecord(srv, token, ids[0]!, (r) => r.queue_status.status === 'process');
    await srv.close();
    srv = await startTestServer(env);
    try {
      for (const id of ids) {
        const record = await waitForRecord(srv, token, id, (r) => r.queue_status.status === 'success', 15_000);
        assert.equal(record.queue_status.progress, 100);
      }
    } finally {
      await srv.close();
    }
  });
});

/** An engine the test steers: each run waits for the test to finish or fail it. */
class ScriptedEngine implements GenerationEngine {
  readonly runs = new Map<string, { finish: () => void; fail: (err: Error) => void; signal: AbortSignal }>();
  private readonly arrivals: ((taskId: string) => void)[] = [];
  readonly cancellable: boolean;

  constructor(cancellable: boolean) {
    this.cancellable = cancellable;
  }

  async run(job: GenerationJob, ctx: RunContext) {
    await ctx.progress(40, 'working');
    await new Promise<void>((resolve, reject) => {
      this.runs.set(job.taskId, { finish: resolve, fail: reject, signal: ctx.signal });
      ctx.signal.addEventListener('abort', () => reject(ctx.signal.reason as Error), { once: true });
      for (const arrived of this.arrivals.splice(0)) arrived(job.taskId);
    });
    return { files: [], texts: [{ content: `done ${job.taskId}` }] };
  }

  async running(taskId: string): Promise<NonNullable<ReturnType<ScriptedEngine['runs']['get']>>> {
    while (!this.runs.has(taskId)) await Promise.race([new Promise((r) => this.arrivals.push(r)), delay(50)]);
    return this.runs.get(taskId)!;
  }
}

function engines(engine: GenerationEngine): EngineRegistry {
  return { engineFor: () => engine };
}

describe('tasks on a scripted engine', () => {
  it('sync: a task the engine refuses answers 422 task_rejected with its task_id', async () => {
    const engine: GenerationEngine = {
      cancellable: true,
      check(job) {
        if (job.endpoint === 'images.generations' && job.input.prompt === 'refuse me') throw new TaskRejectedError('this engine refuses that prompt');
      },
      run: async () => ({ files: [] }),
    };
    const srv = await startTestServer({}, { engines: engines(engine) });
    try {
      const token = await srv.tokenFor('painter');
      const res = await submit(srv, token, { ...IMAGE, prompt: 'refuse me' });
      assert.equal(res.status, 422);
      const body: Json = await res.json();
      assert.equal(body.error.code, 'task_rejected');
      assert.match(body.error.task_id, /^task_/);
      const record = await waitForRecord(srv, token, body.error.task_id, () => true);
      assert.equal(record.queue_status.status, 'rejected');
      assert.equal(record.queue_status.message, 'this engine refuses that prompt');
    } finally {
      await srv.close();
    }
  });

  it('an engine error answers 502 task_failed with the task id and the original message', async () => {
    const engine = new ScriptedEngine(true);
    const srv = await startTestServer({}, { engines: engines(engine) });
    try {
      const token = await srv.tokenFor('u');
      const pending = submit(srv, token, IMAGE);
      const taskId = await new Promise<string>((resolve) => srv.server.services.bus.subscribe('task.status', (e) => resolve(e.taskId)));
      (await engine.running(taskId)).fail(new Error('upstream exploded'));
      const res = await pending;
      assert.equal(res.status, 502);
      const body: Json = await res.json();
      assert.equal(body.error.code, 'task_failed');
      assert.equal(body.error.task_id, taskId);
      const record = await waitForRecord(srv, token, taskId, () => true);
      assert.equal(record.queue_status.status, 'failed');
      assert.equal(record.queue_status.original_error_message, 'upstream exploded');
    } finally {
      await srv.close();
    }
  });

  it('a task of an external API provider cannot be cancelled (409 task_not_cancellable)', async () => {
    const engine = new ScriptedEngine(false);
    const srv = await startTestServer({}, { engines: engines(engine) });
    try {
      const token = await srv.tokenFor('u');
      const { task_id } = await (await submit(srv, token, IMAGE, { 'x-async': '1' })).json() as Json;
      const run = await engine.running(task_id);
      const res = await srv.fetch(`/v1/ai/cancel/${task_id}`, { token });
      assert.equal(res.status, 409);
      assert.equal(((await res.json()) as Json).error.code, 'task_not_cancellable');
      run.finish();
      const record = await waitForRecord(srv, token, task_id, (r) => r.queue_status.status === 'success');
      assert.deepEqual(record.queue_status.output_content, [{ type: 'text', content: `done ${task_id}` }]);
    } finally {
      await srv.close();
    }
  });

  it('cancel reaches the engine as an abort; a finish racing a cancel leaves exactly one terminal state', async () => {
    const engine = new ScriptedEngine(true);
    const srv = await startTestServer({ WORKER_CONCURRENCY: '32' }, { engines: engines(engine) });
    const events = recordEvents(srv);
    try {
      const token = await srv.tokenFor('racer');
      const ids: string[] = [];
      for (let i = 0; i < 30; i++) ids.push(((await (await submit(srv, token, IMAGE, { 'x-async': '1' })).json()) as Json).task_id);
      const runs = await Promise.all(ids.map((id) => engine.running(id)));
      // Finish and cancel every task at the same moment.
      const answers = await Promise.all(ids.map(async (id, i) => {
        runs[i]!.finish();
        return (await srv.fetch(`/v1/ai/cancel/${id}`, { token })).status;
      }));
      const records = await Promise.all(ids.map((id) => waitForRecord(srv, token, id, (r) => ['success', 'cancelled'].includes(r.queue_status.status))));
      await events.until(() => ids.every((id) => events.of(id).some((e) => ['success', 'cancelled'].includes(e.status))));
      for (const [i, id] of ids.entries()) {
        const terminal = events.of(id).filter((e) => ['success', 'failed', 'cancelled'].includes(e.status));
        assert.equal(terminal.length, 1, `task ${id} announced ${terminal.map((e) => e.status).join(', ')}`);
        assert.equal(terminal[0]!.status, records[i].queue_status.status);
        // A 200 cancel means the record is cancelled; a 409 means the finish won.
        assert.equal(answers[i] === 200 ? 'cancelled' : 'success', records[i].queue_status.status, `cancel answered ${answers[i]}`);
      }

      const { task_id } = await (await submit(srv, token, IMAGE, { 'x-async': '1' })).json() as Json;
      const run = await engine.running(task_id);
      assert.equal((await srv.fetch(`/v1/ai/cancel/${task_id}`, { token })).status, 200);
      await events.until(() => run.signal.aborted);
      assert.equal(run.signal.aborted, true, 'the engine saw the abort');
    } finally {
      await srv.close();
    }
  });
});

describe('local engine', () => {
  it('spreads its progress over LOCAL_ENGINE_MIN_DURATION_MS', async () => {
    const engine = new LocalEngine({ minDurationMs: 300 });
    const job: GenerationJob = { taskId: 't', ownerId: 'o', endpoint: 'images.generations', model: { alias: 'm' } as GenerationJob['model'], input: { prompt: 'a dot', size: '8x8' }, attempt: 1 };
    const ctx = runContext();
    const seen = ctx.progressSeen;
    const started = Date.now();
    const out = await engine.run(job, ctx);
    assert.ok(Date.now() - started >= 290, 'took at least the minimum duration');
    assert.deepEqual(seen, [...seen].sort((a, b) => a - b));
    assert.equal(out.files.length, 1);
    assert.ok(seen.length >= 3, 'progress is reported along the way');
    const instantCtx = runContext();
    const again = await new LocalEngine({ minDurationMs: 0 }).run(job, instantCtx);
    assert.deepEqual(instantCtx.progressSeen, [], 'without a minimum duration the run ends at once');
    assert.deepEqual(again.files[0]!.data, out.files[0]!.data, 'deterministic');
  });
});

describe('x-deadline', () => {
  it('refuses a deadline that is not a future ISO-8601 time or whole seconds: 400 invalid_deadline naming x-deadline', async () => {
    const srv = await startTestServer();
    try {
      const token = await srv.tokenFor('early');
      const past = new Date(Date.now() - 60_000).toISOString();
      for (const bad of ['soon', '1.5', '-3', '0', past, '2026-13-40T99:00:00Z', 'tomorrow 9am']) {
        const res = await submit(srv, token, IMAGE, { 'x-async': '1', 'x-deadline': bad });
        const body: Json = await res.json();
        assert.equal(res.status, 400, `${bad}: ${JSON.stringify(body)}`);
        assert.equal(body.error.code, 'invalid_deadline', bad);
        assert.equal(body.error.param, 'x-deadline', bad);
      }
      const future = new Date(Date.now() + 60_000).toISOString();
      for (const good of ['30', future]) assert.equal((await submit(srv, token, IMAGE, { 'x-async': '1', 'x-deadline': good })).status, 200, good);
    } finally {
      await srv.close();
    }
  });

  for (const queue of ['database', 'BullMQ'] as const) it(`fails a task still waiting at its deadline within a second, never running it, at no cost; a started task is not affected (${queue} queue)`, async (t) => {
    const redis = queue === 'BullMQ' ? await redisEnv() : { env: {}, cleanup: async () => undefined };
    if ('skip' in redis) return t.skip(redis.skip);
    const engine = new ScriptedEngine(true);
    const srv = await startTestServer({ WORKER_CONCURRENCY: '1', ...redis.env }, { engines: engines(engine) });
    try {
      const token = await srv.tokenFor('late');
      // The one worker slot is held by a task that has a deadline too: started, it runs on past it.
      const busy: Json = await (await submit(srv, token, IMAGE, { 'x-async': '1', 'x-deadline': '1' })).json();
      const run = await engine.running(busy.task_id);
      const submittedAt = Date.now();
      const waiting: Json = await (await submit(srv, token, IMAGE, { 'x-async': '1', 'x-deadline': '1' })).json();
      const failed = await waitForRecord(srv, token, waiting.task_id, (r) => r.queue_status.status !== 'submitted', 5_000);
      const failedAfter = Date.now() - submittedAt;
      assert.equal(failed.queue_status.status, 'failed');
      assert.equal(failed.queue_status.message, 'deadline exceeded');
      assert.ok(failedAfter < 2_000 + 500, `failed ${failedAfter} ms after its submit (deadline 1 s)`);
      assert.ok(failed.queue_status.started_at == null, 'it never started');

      // A sync submit whose deadline passes while it waits answers 502 task_failed with its task id.
      const sync = await submit(srv, token, IMAGE, { 'x-deadline': '1' });
      const syncBody: Json = await sync.json();
      assert.equal(sync.status, 502, JSON.stringify(syncBody));
      assert.equal(syncBody.error.code, 'task_failed');
      assert.match(syncBody.error.task_id, /^task_/);

      run.finish();
      const done = await waitForRecord(srv, token, busy.task_id, (r) => r.queue_status.status === 'success');
      assert.equal(done.queue_status.status, 'success');
      // The worker is free again: had the expired tasks been queued still, it would take them now.
      const after: Json = await (await submit(srv, token, IMAGE, { 'x-async': '1' })).json();
      (await engine.running(after.task_id)).finish();
      await waitForRecord(srv, token, after.task_id, (r) => r.queue_status.status === 'success');
      assert.deepEqual([...engine.runs.keys()].sort(), [busy.task_id, after.task_id].sort(), 'the expired tasks never reached the engine');

      const ledger: Json[] = ((await (await srv.fetch('/admin/requests?user_id=late', { token: srv.adminToken })).json()) as Json).data;
      for (const taskId of [waiting.task_id, syncBody.error.task_id]) {
        const row = ledger.find((r) => r.task_id === taskId);
        assert.ok(row, `a ledger row for ${taskId}: ${JSON.stringify(ledger)}`);
        assert.equal(row.cost, 0, JSON.stringify(row));
      }
    } finally {
      await srv.close();
      await redis.cleanup();
    }
  });
});

describe('queue position', () => {
  it('counts the earlier waiting tasks of the same model, and is gone once the task starts', async () => {
    const engine = new ScriptedEngine(true);
    const srv = await startTestServer({ WORKER_CONCURRENCY: '1' }, { engines: engines(engine) });
    try {
      const token = await srv.tokenFor('queued');
      const submitAsync = async (body: Json): Promise<string> => ((await (await submit(srv, token, body, { 'x-async': '1' })).json()) as Json).task_id;
      const busy = await submitAsync(IMAGE);
      const run = await engine.running(busy);
      const waiting: string[] = [];
      for (let i = 0; i < 3; i++) {
        waiting.push(await submitAsync(IMAGE));
        // A task of another model waits too, but not in this model's line.
        await submitAsync({ ...IMAGE, model: 'gpt-image-1' });
      }
      const positions = [];
      for (const taskId of waiting) positions.push((await waitForRecord(srv, token, taskId, () => true)).queue_status.queue_position);
      assert.deepEqual(positions, [0, 1, 2]);
      const running = await waitForRecord(srv, token, busy, () => true);
      assert.equal('queue_position' in running.queue_status, false);
      run.finish();
      const started = await waitForRecord(srv, token, waiting[0]!, (r) => r.queue_status.status !== 'submitted');
      assert.equal('queue_position' in started.queue_status, false, JSON.stringify(started.queue_status));
    } finally {
      for (const { finish } of engine.runs.values()) finish();
      await srv.close();
    }
  });
});
