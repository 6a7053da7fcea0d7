import { after, before, describe } from 'node:test';
import assert from 'node:assert/strict';
import { Redis } from 'ioredis';
import { REDIS_URL } from './support/server.ts';
import { Deployment, deploymentTest, frozenInstanceKeepsItsTask, RealtimeClient, statusOf, survivorTakesOverWithin10s, type Instance } from './support/multi-instance.ts';
import { eventually } from './support/wait.ts';

describe('two instances on one PostgreSQL schema and one Redis prefix', () => {
  let deployment: Deployment | { skip: string } | undefined;
  let a: Instance;
  let b: Instance;
  let redis: Redis;
  let prefix: string;
  let realtime: RealtimeClient | undefined;

  before(async () => {
    deployment = await Deployment.start(true);
    if ('skip' in deployment) {
      process.stdout.write(`# ${deployment.skip}\n`);
      return;
    }
    ({ a, b } = deployment);
    prefix = deployment.redisPrefix!;
    redis = new Redis(REDIS_URL);
    // Opened before anything is submitted, on the instance that does not take the submits.
    realtime = await RealtimeClient.open(b.url, deployment.token);
  });

  after(async () => {
    realtime?.close();
    await redis?.quit();
    if (deployment && !('skip' in deployment)) await deployment.stop();
  });

  const d = () => deployment as Deployment;
  const test = (name: string, fn: () => Promise<void>) => deploymentTest(() => deployment, name, fn);
  const submitToA = () => d().submitToA();
  const recordOf = (instance: Instance, taskId: string) => d().recordOf(instance, taskId);
  const callbacksOf = (taskId: string) => d().callbacksOf(taskId);

  /** Whether the task's BullMQ job is gone, i.e. no worker holds or waits for it any more. */
  async function jobGone(taskId: string): Promise<true | undefined> {
    return (await redis.exists(`${prefix}:tasks:${taskId}`)) === 0 ? true : undefined;
  }

  test('a task submitted to A runs exactly once and its pushes reach a session on B', async () => {
    const taskId = await submitToA();
    const pushed = await realtime!.until(`success of ${taskId}`, (m) => m.type === 'task.status' && m.taskId === taskId && statusOf(m.data) === 'success', 30_000);
    await eventually('the job to leave Redis', () => jobGone(taskId));

    const record = await recordOf(b, taskId);
    assert.equal(statusOf(record), 'success');
    assert.ok(['multi-a', 'multi-b'].includes(record.queue_status.server), `server: ${record.queue_status.server}`);
    assert.equal(record.queue_status.data.output.length, 1, 'one output, stored once');
    assert.deepEqual(pushed.data.queue_status.data.output, record.queue_status.data.output);

    const pushes = realtime!.statusesOf(taskId).map(statusOf);
    assert.equal(pushes[0], 'submitted');
    assert.equal(pushes.filter((s) => s === 'started').length, 1, `pushes: ${pushes.join(' ')}`);
    assert.equal(pushes.filter((s) => s === 'success').length, 1);
    // Every update after the start names the same server: no second run took over.
    const servers = new Set(realtime!.statusesOf(taskId).flatMap((d) => (d.queue_status.server ? [d.queue_status.server] : [])));
    assert.deepEqual([...servers], [record.queue_status.server]);

    // One callback per update, whichever instance's dispatcher sent it.
    const callbacks = await eventually('the success callback', () => {
      const got = callbacksOf(taskId);
      return got.some((c) => statusOf(c.json) === 'success') ? got : undefined;
    });
    const ids = callbacks.map((c) => c.id);
    assert.equal(new Set(ids).size, ids.length, `a callback was sent twice: ${ids.join(' ')}`);
    assert.deepEqual(callbacks.map((c) => statusOf(c.json)), pushes);
  });

  test('a cancel through one instance stops the task running on the other', async () => {
    const taskId = await submitToA();
    const running = await realtime!.until(`progress of ${taskId}`, (m) => m.type === 'task.status' && m.taskId === taskId && statusOf(m.data) === 'process', 30_000);
    const runner = running.data.queue_status.server as string;
    const other = runner === 'multi-a' ? b : a;

    const res = await other.fetch(`/v1/ai/cancel/${taskId}`, d().token);
    assert.equal(res.status, 200);
    assert.equal(statusOf(await res.json()), 'cancelled');

    // The runner lets go of the job once its engine stopped; the task must still be cancelled then.
    await eventually('the job to leave Redis', () => jobGone(taskId));
    for (const instance of [a, b]) {
      const record = await recordOf(instance, taskId);
      assert.equal(statusOf(record), 'cancelled');
      assert.deepEqual(record.queue_status.data.output, []);
    }
    await realtime!.until(`cancelled of ${taskId}`, (m) => m.type === 'task.status' && m.taskId === taskId && statusOf(m.data) === 'cancelled');
    const pushes = realtime!.statusesOf(taskId).map(statusOf);
    assert.equal(pushes.at(-1), 'cancelled');
    assert.ok(!pushes.includes('success'), `pushes: ${pushes.join(' ')}`);
    const callbacks = await eventually('the cancelled callback', () => {
      const got = callbacksOf(taskId);
      return got.some((c) => statusOf(c.json) === 'cancelled') ? got : undefined;
    });
    assert.ok(!callbacks.some((c) => statusOf(c.json) === 'success'));
  });

  test('an instance frozen for less than the heartbeat TTL keeps its task', () => frozenInstanceKeepsItsTask(d()));

  // Last: it leaves one instance standing.
  test('the task of an instance that dies is taken over by the other within 10 s', () => survivorTakesOverWithin10s(d()));
});
