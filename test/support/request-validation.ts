import { it } from 'node:test';
import assert from 'node:assert/strict';
import type { GenerationEngine, GenerationJob } from '../../src/providers/spec.ts';
import type { Json } from './provider-harness.ts';

/** An engine that keeps each job it is handed instead of running it, so accepted requests can be read back. */
export function jobRecorder(): { engine: GenerationEngine; jobs: GenerationJob[] } {
  const jobs: GenerationJob[] = [];
  return { jobs, engine: { cancellable: true, run: async (job) => (jobs.push(job), { files: [] }) } };
}

/** `body` without the field `key`. */
export function without(body: Record<string, unknown>, key: string): Record<string, unknown> {
  return Object.fromEntries(Object.entries(body).filter(([k]) => k !== key));
}

/** A refused request: test name, body, HTTP status, error code and the param the error names. */
export type Refusal = [name: string, body: Json, status: number, code: string, param: string];

/** Registers a test per refused body: its status, code, param and the error type of that status. */
export function itRejects(submit: (body: Json) => Promise<Response>, refusals: Refusal[]): void {
  for (const [name, body, status, code, param] of refusals) {
    it(`rejects ${name}: ${status} ${code} on ${param}`, async () => {
      const res = await submit(body);
      const error: Json = (await res.json()).error;
      assert.equal(res.status, status, JSON.stringify(error));
      assert.equal(error.code, code);
      assert.equal(error.param, param);
      assert.equal(error.type, status === 404 ? 'not_found_error' : 'invalid_request_error');
    });
  }
}

/**
 * Registers a test per accepted body: a success of `type` whose job reaches the engine (see
 * jobRecorder) for `endpoint` with the request's fields as sent.
 */
export function itAccepts(opts: { submit: (body: Json) => Promise<Response>; jobs: GenerationJob[]; endpoint: string; type: string }, accepted: [name: string, body: Json][]): void {
  for (const [name, body] of accepted) {
    it(`accepts ${name} and hands the fields to the engine as sent`, async () => {
      const res = await opts.submit(body);
      const draw: Json = await res.json();
      assert.equal(res.status, 200, JSON.stringify(draw));
      assert.equal(draw.status, 'success');
      assert.equal(draw.type, opts.type);
      const job = opts.jobs.find((j) => j.taskId === draw.task_id)!;
      assert.equal(job.endpoint, opts.endpoint);
      assert.equal(job.model.alias, body.model);
      const { model: _model, ...input } = body;
      assert.deepEqual(job.input, input);
    });
  }
}
