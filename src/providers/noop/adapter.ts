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
  run: async (): Promise<GenerationOutput> => ({
    files: [{ type: 'image', data: PIXEL_PNG, fileName: 'noop.png', mimeType: 'image/png', mediaSize: { type: 'image', width: 1, height: 1, status: 1 } }],
  }),
});
