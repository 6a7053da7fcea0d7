/**
 * The import graph of src/, as the import tests read it: every relative import (`import`,
 * `import type`, `export … from`, dynamic `import()`) of every module, found by TypeScript's own
 * pre-processor.
 */
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import ts from 'typescript';

/** The tests run from the project's root (from the sources, or from scripts/test-tree.mjs's JavaScript). */
export const SRC = path.resolve('src');

export function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) return sourceFiles(full);
    return entry.name.endsWith('.ts') ? [full] : [];
  });
}

/** Module -> the modules of src/ it imports, as paths relative to src/. */
export function importGraph(files: readonly string[]): Map<string, string[]> {
  const graph = new Map<string, string[]>();
  for (const file of files) {
    const { importedFiles } = ts.preProcessFile(readFileSync(file, 'utf8'), true, true);
    const targets = importedFiles
      .map((imported) => imported.fileName)
      .filter((specifier) => specifier.startsWith('.'))
      .map((specifier) => path.relative(SRC, path.resolve(path.dirname(file), specifier)))
      .filter((target) => target.endsWith('.ts') && !target.startsWith('..'));
    graph.set(path.relative(SRC, file), [...new Set(targets)]);
  }
  return graph;
}
