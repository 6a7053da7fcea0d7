/**
 * End handlers (TaskService.onEnd): what a domain records when a task ends is written in the
 * transaction that writes the terminal status, or not at all.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { setTimeout as delay } from 'node:timers/promises';
import sharp from 'sharp';
import type { EngineRegistry } from '../src/providers/registry.ts';
import type { GenerationEngine, GenerationOutput, RunContext } from '../src/providers/spec.ts';
import { parseResult } from '../src/tasks/task-record.ts';
import type { TaskEnding } from '../src/tasks/task-endings.ts';
import { startTestServer, type TestServer } from './support/server.ts';
import { eventually } from './support/wait.ts';

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = any;

const IMAGE = { prompt: 'a lighthouse', model: 'seedream-4.0', size: '64x48' };

/** An engine that makes one PNG once the test lets it finish. */
class GatedEngine implements GenerationEngine {
  readonly cancellable = true;
  private readonly gates = new Map<string, () => void>();
  private readonly arrivals: (() => void)[] = [];

  async run(job: { taskId: string }, ctx: RunContext): Promise<GenerationOutput> {
    await new Promise<void>((resolve, reject) => {
      this.gates.set(job.taskId, resolve);
      ctx.signal.addEventListener('abort', () => reject(ctx.signal.reason as Error), { once: true });
      for (const arrived of this.arrivals.splice(0)) arrived();
    });
    const png = await sharp({ create: { width: 4, height: 4, channels: 3, background: '#3060c0' } }).png().toBuffer();
    return { files: [{ type: 'image', data: png, fileName: 'lighthouse.png', mimeType: 'image/png' }] };
  }

  /** Lets the task's run finish once it has started. */
  async finish(taskId: string): Promise<void> {
    while (!this.gates.has(taskId)) await Promise.race([new Promise<void>((r) => this.arrivals.push(r)), delay(50)]);
    this.gates.get(taskId)!();
  }
}

function engines(engine: GenerationEngine): EngineRegistry {
  return { engineFor: () => engine };
}

async function submitAsync(srv: TestServer, token: string): Promise<string> {
  const res = await srv.fetch('/v1/images/generations', { method: 'POST', token, json: IMAGE, headers: { 'x-async': '1' } });
  assert.equal(res.status, 200, await res.clone().text());
  return ((await res.json()) as Json).task_id;
}

async function waitForEnd(srv: TestServer, taskId: string): Promise<Json> {
  const record = await srv.server.services.tasks.waitForEnd(taskId, 10_000);
  assert.ok(record, `task ${taskId} did not end`);
  return record;
}

async function outputAssets(srv: TestServer, token: string): Promise<Json[]> {
  const res = await srv.fetch('/api/assets?include_tags=output', { token });
  assert.equal(res.status, 200);
  return ((await res.json()) as Json).assets;
}

describe('task end handlers', () => {
  it('run at every end, after the output store, and what they add to the result is stored with the end', async () => {
    const engine = new GatedEngine();
    const srv = await startTestServer({}, { engines: engines(engine) });
    try {
      const seen: { status: string; items: number }[] = [];
      srv.server.services.tasks.onEnd('images.generations', async (ending) => {
        seen.push({ status: ending.status, items: ending.result.output_content?.length ?? 0 });
        ending.result.extra = { ...ending.result.extra, noted: ending.status };
        return undefined;
      });
      const token = await srv.tokenFor('keeper');
      const done = await submitAsync(srv, token);
      await engine.finish(done);
      const record = await waitForEnd(srv, done);
      assert.equal(record.queue_status.status, 'success');
      const [item] = record.queue_status.output_content;
      assert.equal(item.filename, 'lighthouse.png');
      assert.equal((await fetch(item.url)).status, 200, 'the output file is served');
      assert.equal((await outputAssets(srv, token)).length, 1, 'the output is the owner\'s asset');
      assert.deepEqual(parseResult((await srv.server.services.tasks.load(done))!).extra, { noted: 'success' });

      const cancelled = await submitAsync(srv, token);
      const res = await srv.fetch(`/v1/ai/cancel/${cancelled}`, { token });
      assert.equal(res.status, 200);
      assert.deepEqual(parseResult((await srv.server.services.tasks.load(cancelled))!).extra, { noted: 'cancelled' });
      assert.deepEqual(seen, [{ status: 'success', items: 1 }, { status: 'cancelled', items: 0 }]);
    } finally {
      await srv.close();
    }
  });

  it('a handler whose write fails rolls the whole end back: no success, no served file, no output asset', async () => {
    const engine = new GatedEngine();
    const srv = await startTestServer({}, { engines: engines(engine) });
    try {
      let abandoned = 0;
      srv.server.services.tasks.onEnd('images.generations', async (ending) => {
        if (ending.status !== 'success') return undefined;
        return {
          write: async () => {
            throw new Error('the history table is gone');
          },
          abandon: async () => {
            abandoned++;
          },
        };
      });
      const token = await srv.tokenFor('unlucky');
      const taskId = await submitAsync(srv, token);
      await engine.finish(taskId);
      const record = await waitForEnd(srv, taskId);
      assert.equal(record.queue_status.status, 'failed');
      assert.equal(record.queue_status.original_error_message, 'the history table is gone');
      assert.deepEqual(record.queue_status.output_content, []);
      assert.deepEqual(await outputAssets(srv, token), []);
      assert.equal(abandoned, 1, 'the handler was told to drop what it stored');
    } finally {
      await srv.close();
    }
  });

  it('ends committed together stay apart: one whose write fails rolls back alone, the others succeed with their outputs', async () => {
    const engine = new GatedEngine();
    const srv = await startTestServer({}, { engines: engines(engine) });
    try {
      const token = await srv.tokenFor('neighbours');
      const [unlucky, ...others] = await Promise.all([1, 2, 3, 4].map(() => submitAsync(srv, token)));
      srv.server.services.tasks.onEnd('images.generations', async (ending) => {
        if (ending.status !== 'success' || ending.task.id !== unlucky) return undefined;
        return {
          write: async (db) => {
            // A row of its own first: the rollback must take it away too.
            await db.kysely.insertInto('settings').values({ key: 'written-by-a-failed-end', value: '1', updated_at: Date.now() }).execute();
            throw new Error('the history table is gone');
          },
        };
      });
      // Released in one turn of the event loop, so their ends are written together.
      await Promise.all([unlucky, ...others].map((id) => engine.finish(id)));
      const records = await Promise.all([unlucky, ...others].map((id) => waitForEnd(srv, id)));
      assert.equal(records[0].queue_status.status, 'failed');
      assert.equal(records[0].queue_status.original_error_message, 'the history table is gone');
      for (const record of records.slice(1)) {
        assert.equal(record.queue_status.status, 'success');
        assert.equal((await fetch(record.queue_status.output_content[0].url)).status, 200);
      }
      assert.equal((await outputAssets(srv, token)).length, others.length, 'each successful task has its output asset, the failed one none');
      const leaked = await srv.server.services.db.kysely.selectFrom('settings').select('key').where('key', '=', 'written-by-a-failed-end').executeTakeFirst();
      assert.equal(leaked, undefined, 'the failed end\'s own row was rolled back');
    } finally {
      await srv.close();
    }
  });

  it('an end that loses the compare-and-set to a cancel writes nothing of its own and drops its files', async () => {
    const engine = new GatedEngine();
    const srv = await startTestServer({}, { engines: engines(engine) });
    try {
      let preparing!: () => void;
      const successPreparing = new Promise<void>((resolve) => (preparing = resolve));
      let release!: () => void;
      const released = new Promise<void>((resolve) => (release = resolve));
      const written: string[] = [];
      let abandoned = 0;
      let successOutputs: TaskEnding['result']['output_content'];
      srv.server.services.tasks.onEnd('images.generations', async (ending) => {
        if (ending.status === 'success') {
          successOutputs = ending.result.output_content;
          preparing();
          await released;
        }
        return {
          write: async () => {
            written.push(ending.status);
          },
          abandon: async () => {
            abandoned++;
          },
        };
      });
      const token = await srv.tokenFor('racer');
      const taskId = await submitAsync(srv, token);
      await engine.finish(taskId);
      await successPreparing;
      const res = await srv.fetch(`/v1/ai/cancel/${taskId}`, { token });
      assert.equal(res.status, 200);
      release();
      const record = await waitForEnd(srv, taskId);
      assert.equal(record.queue_status.status, 'cancelled');
      // The success's own transition answers once its compare-and-set has lost.
      await eventually('the success\'s transition to answer', () => abandoned > 0, 5000);
      assert.deepEqual(written, ['cancelled']);
      assert.equal(abandoned, 1);
      assert.deepEqual(await outputAssets(srv, token), []);
      assert.equal(successOutputs?.length, 1);
      assert.equal((await fetch(successOutputs![0]!.url!)).status, 404, 'the file prepared for the lost end is not served');
    } finally {
      await srv.close();
    }
  });
});
