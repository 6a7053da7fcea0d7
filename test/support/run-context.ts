import { readFile } from 'node:fs/promises';
import type { InputFile, RunContext } from '../../src/providers/spec.ts';

/** A RunContext for calling an engine directly: progress and warnings are recorded, inputs are read from data URIs or files. */
export function runContext(opts: { signal?: AbortSignal; inputs?: Record<string, InputFile> } = {}): RunContext & { progressSeen: number[]; remembered: Record<string, unknown>[]; warnings: string[]; previews: InputFile[] } {
  const progressSeen: number[] = [];
  const previews: InputFile[] = [];
  const warnings: string[] = [];
  const remembered: Record<string, unknown>[] = [];
  return {
    signal: opts.signal ?? new AbortController().signal,
    progressSeen,
    remembered,
    progress: async (percent) => void progressSeen.push(percent),
    remember: async (state) => void remembered.push(state),
    readInput: async (ref) => {
      const known = opts.inputs?.[ref];
      if (known) return known;
      const data = ref.startsWith('data:') ? Buffer.from(ref.slice(ref.indexOf(',') + 1), 'base64') : await readFile(ref);
      return { data, mimeType: 'application/octet-stream', fileName: ref.split('/').pop() ?? 'input' };
    },
    publish: async (_data, fileName) => `http://127.0.0.1/files/published/${fileName}`,
    warnings,
    warn: (message) => void warnings.push(message),
    previews,
    preview: async (data, mimeType) => void previews.push({ data, mimeType, fileName: 'preview' }),
  };
}
