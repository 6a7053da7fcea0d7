import type { AdapterFactory } from '../adapter-support.ts';
import type { GenerationEngine, GenerationOutput } from '../spec.ts';

/** A 1×1 transparent PNG: the smallest real image, so the gateway's storage path runs in full. */
const PIXEL_PNG = Buffer.from('iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==', 'base64');

/**
 * The `noop` adapter, for benchmarks of the task pipeline: every task of any endpoint succeeds at
 * once with the same one-pixel image, so what is measured is the gateway (submit, queue, status
 * changes, outputs, assets, ledger, callbacks) and not an engine. No catalog provider uses it; a
 * provider runs on it only when GENGATE_CONFIG says `providers.<code>.adapter = "noop"`.
 */
export const noopAdapter: AdapterFactory = (): GenerationEngine => ({
  cancellable: true,
  // Named after the task, as the local engine names its outputs: a name shared by every task
  // would be numbered anew each time (a (1).png, a (2).png, …), one lookup per number taken.
  run: async (job): Promise<GenerationOutput> => ({
    files: [{ type: 'image', data: PIXEL_PNG, fileName: `${job.taskId}.png`, mimeType: 'image/png', mediaSize: { type: 'image', width: 1, height: 1, status: 1 } }],
  }),
});
