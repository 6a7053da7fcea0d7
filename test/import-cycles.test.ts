/**
 * No import cycle in src/: every relative import (`import`, `import type`, `export … from`,
 * dynamic `import()`) of every module is a graph edge, and the graph must be acyclic.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { importGraph, SRC, sourceFiles } from './support/import-graph.ts';

/** The strongly connected components with more than one module, or a module importing itself (Tarjan). */
function cycles(graph: Map<string, string[]>): string[][] {
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const found: string[][] = [];
  const visit = (node: string): void => {
    index.set(node, index.size);
    low.set(node, index.get(node)!);
    stack.push(node);
    onStack.add(node);
    for (const next of graph.get(node) ?? []) {
      if (!index.has(next)) {
        visit(next);
        low.set(node, Math.min(low.get(node)!, low.get(next)!));
      } else if (onStack.has(next)) {
        low.set(node, Math.min(low.get(node)!, index.get(next)!));
      }
    }
    if (low.get(node) !== index.get(node)) return;
    const component: string[] = [];
    let member: string;
    do {
      member = stack.pop()!;
      onStack.delete(member);
      component.push(member);
    } while (member !== node);
    if (component.length > 1 || graph.get(node)?.includes(node)) found.push(component);
  };
  for (const node of graph.keys()) if (!index.has(node)) visit(node);
  return found;
}

/** One concrete loop through a component, for the message: a -> b -> … -> a. */
function loopThrough(component: readonly string[], graph: Map<string, string[]>): string[] {
  const members = new Set(component);
  const start = [...component].sort()[0]!;
  const previous = new Map<string, string>();
  const queue = [start];
  while (queue.length > 0) {
    const node = queue.shift()!;
    for (const next of graph.get(node) ?? []) {
      if (!members.has(next)) continue;
      if (next === start) {
        const loop = [start];
        for (let at = node; at !== start; at = previous.get(at)!) loop.splice(1, 0, at);
        return [...loop, start];
      }
      if (!previous.has(next)) {
        previous.set(next, node);
        queue.push(next);
      }
    }
  }
  return [...component, start];
}

describe('import graph of src/', () => {
  const graph = importGraph(sourceFiles(SRC));

  it('reads the imports of every module', () => {
    assert.ok(graph.size > 50, `only ${graph.size} modules found under ${SRC}`);
    assert.ok(graph.get('main.ts')?.includes('tasks/task-service.ts'), 'main.ts imports the task service');
    assert.ok(graph.get('main.ts')?.includes('storage/redis-event-bus.ts'), 'dynamic imports count');
  });

  it('finds a cycle when there is one', () => {
    const looped = new Map([['a.ts', ['b.ts']], ['b.ts', ['c.ts']], ['c.ts', ['a.ts']], ['d.ts', ['a.ts']]]);
    assert.deepEqual(cycles(looped).map((c) => loopThrough(c, looped)), [['a.ts', 'b.ts', 'c.ts', 'a.ts']]);
  });

  it('has no cycle', () => {
    const loops = cycles(graph).map((component) => `${loopThrough(component, graph).join(' -> ')}\n  (${component.length} modules in this cycle: ${[...component].sort().join(', ')})`);
    assert.deepEqual(loops, [], `import cycles in src/:\n${loops.join('\n')}`);
  });
});
