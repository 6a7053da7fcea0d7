/**
 * src/'s folders form layers: a module imports only modules of folders in lower layers (its own
 * folder aside), `import type` and dynamic `import()` included. The order is written once, here.
 */
import assert from 'node:assert/strict';
import { readdirSync } from 'node:fs';
import { describe, it } from 'node:test';
import { importGraph, SRC, sourceFiles } from '../support/import-graph.ts';

/**
 * From the bottom up. Folders of one layer do not import each other. The limits service sits
 * above tasks: it implements the task service's admission and settles at a task's end through
 * an end handler, as the modality services record theirs. MCP sits below the agent, whose tool
 * loop runs MCP tools.
 */
const LAYERS: readonly (readonly string[])[] = [
  ['core'],
  ['telemetry'],
  ['config'],
  ['storage'],
  ['auth', 'assets', 'files'],
  ['catalog'],
  ['endpoints'],
  ['providers'],
  ['routing'],
  ['runtime-settings'],
  ['tasks'],
  ['limits'],
  ['images', 'video', 'audio', 'digital-human', 'mesh3d', 'embeddings', 'rerank'],
  ['chat'],
  ['mcp'],
  ['agent'],
  ['realtime', 'overview'],
  ['openai', 'anthropic'],
  ['batches'],
  ['http'],
  ['main.ts'],
  ['cli.ts'],
];

/** The folder of src/ a module is in, or the module itself for a file at src/'s top. */
const unitOf = (module: string): string => module.split('/')[0]!;

/** Each import that does not go down a layer: `<module> imports <module> (<unit> is not below <unit>)`. */
function upwardImports(graph: Map<string, string[]>, layers: readonly (readonly string[])[]): string[] {
  const layerOf = new Map(layers.flatMap((units, layer) => units.map((unit) => [unit, layer] as const)));
  const found: string[] = [];
  for (const [module, targets] of graph) {
    const from = unitOf(module);
    for (const target of targets) {
      const to = unitOf(target);
      if (from === to || layerOf.get(to)! < layerOf.get(from)!) continue;
      found.push(`${module} imports ${target} (${to} is not below ${from})`);
    }
  }
  return found;
}

describe('layers of src/', () => {
  const graph = importGraph(sourceFiles(SRC));

  it('places every folder and top-level module of src/ in one layer', () => {
    const placed = LAYERS.flat();
    assert.equal(new Set(placed).size, placed.length, 'a unit is named twice');
    const present = readdirSync(SRC).filter((entry) => !entry.startsWith('.')).sort();
    assert.deepEqual(present, [...placed].sort(), 'src/ has folders the layers do not place, or the layers name what src/ lacks');
  });

  it('finds an import that goes up or sideways', () => {
    const graph = new Map([
      ['core/a.ts', ['core/b.ts']],
      ['tasks/t.ts', ['core/a.ts']],
      ['core/b.ts', ['tasks/t.ts']],
      ['images/i.ts', ['video/v.ts']],
    ]);
    assert.deepEqual(upwardImports(graph, LAYERS), [
      'core/b.ts imports tasks/t.ts (tasks is not below core)',
      'images/i.ts imports video/v.ts (video is not below images)',
    ]);
  });

  it('has every import going down', () => {
    assert.ok(graph.get('main.ts')?.includes('http/app.ts'), 'main.ts imports the app');
    const upward = upwardImports(graph, LAYERS);
    assert.deepEqual(upward, [], `imports against the layers of test/unit/layers.test.ts:\n${upward.join('\n')}`);
  });
});
