/**
 * Workflows: named ComfyUI API-format graphs with bindings from request fields to node
 * inputs, one JSON file per workflow (`<name>.json`) in the workflows folder. A request whose
 * `model` names a workflow (and no catalog alias) runs it on ComfyUI.
 */
import fs from 'node:fs';
import path from 'node:path';
import { Type, type Static } from 'typebox';
import { Value } from 'typebox/value';
import type { LiveModel } from '../../catalog/catalog.ts';
import { CAPABILITY_NAMES, type Capabilities, type CapabilityName } from '../../catalog/schema.ts';

/** Where one request field goes in the graph. */
const Binding = Type.Object({
  /** Node id in the graph. */
  node: Type.String({ minLength: 1 }),
  /** Input name of that node. */
  input: Type.String({ minLength: 1 }),
  /** The field holds image references: each is uploaded (POST /upload/image) and the input set to the uploaded name. */
  upload: Type.Optional(Type.Boolean()),
  /** For a list field (e.g. `image`), which item goes here (default 0). */
  index: Type.Optional(Type.Integer({ minimum: 0 })),
  /** When the request leaves the field out, a random integer goes here (seeds: ComfyUI caches identical prompts). */
  random: Type.Optional(Type.Boolean()),
}, { additionalProperties: false });
export type Binding = Static<typeof Binding>;

/** One node of an API-format prompt. */
const GraphNode = Type.Object({
  class_type: Type.String({ minLength: 1 }),
  inputs: Type.Record(Type.String(), Type.Unknown()),
}, { additionalProperties: true });

/** The file format of a workflow (README: "Workflows"). */
export const WorkflowFile = Type.Object({
  description: Type.Optional(Type.String()),
  /** Capability types the workflow serves; an endpoint accepts it when one of them is the one it needs. */
  capabilities: Type.Array(Type.Union(CAPABILITY_NAMES.map((name) => Type.Literal(name))), { minItems: 1 }),
  /** GeneralOutput.type of output files whose kind the file name does not tell. */
  output_type: Type.Optional(Type.String({ minLength: 1 })),
  /** The API-format prompt ("Export (API)" in ComfyUI): node id → {class_type, inputs}. */
  graph: Type.Record(Type.String(), GraphNode),
  /** Request field → the node inputs it sets; `size` ("WxH") also fills `width` and `height`. */
  bindings: Type.Optional(Type.Record(Type.String(), Type.Array(Binding))),
  /** Node ids whose files are the task's outputs; default: every file of type `output` in the run's history. */
  outputs: Type.Optional(Type.Array(Type.String({ minLength: 1 }))),
}, { additionalProperties: false });
export type WorkflowFile = Static<typeof WorkflowFile>;

export interface Workflow extends WorkflowFile {
  name: string;
}

/** A workflow folder that cannot be used; one line per problem, each naming the file. */
export class WorkflowError extends Error {}

const NAME = /^[A-Za-z0-9][A-Za-z0-9._-]*$/;

/** Checks one parsed workflow file; answers its problems, `<file>: <path>: <message>`. */
export function workflowProblems(file: string, data: unknown): string[] {
  const errors = [...Value.Errors(WorkflowFile, data)];
  if (errors.length > 0) {
    return [...new Set(errors
      .filter((e) => e.keyword !== 'additionalProperties')
      .map((e) => `${file}: ${e.instancePath.replaceAll('/', '.') || '$'}: ${e.message === 'schema is false' ? 'unknown key' : e.message}`))];
  }
  const workflow = data as WorkflowFile;
  const lines: string[] = [];
  for (const [field, bindings] of Object.entries(workflow.bindings ?? {})) {
    for (const [i, binding] of bindings.entries()) {
      if (!(binding.node in workflow.graph)) lines.push(`${file}: .bindings.${field}[${i}]: node ${binding.node} is not in the graph`);
    }
  }
  for (const node of workflow.outputs ?? []) if (!(node in workflow.graph)) lines.push(`${file}: .outputs: node ${node} is not in the graph`);
  return lines;
}

/** The workflows of one ComfyUI provider, by name, and the catalog-shaped models they appear as. */
export class WorkflowCatalog {
  readonly #byName: Map<string, { workflow: Workflow; model: LiveModel }>;

  constructor(workflows: Workflow[], providerCode: string) {
    this.#byName = new Map(workflows.map((workflow) => [workflow.name, { workflow, model: workflowModel(workflow, providerCode) }]));
  }

  get(name: string): Workflow | undefined {
    return this.#byName.get(name)?.workflow;
  }

  /** The workflow as a live model (providerCode = the ComfyUI provider; always enabled). */
  model(name: string): LiveModel | undefined {
    return this.#byName.get(name)?.model;
  }

  get names(): string[] {
    return [...this.#byName.keys()];
  }
}

function workflowModel(workflow: Workflow, providerCode: string): LiveModel {
  const capabilities: Record<string, { type: CapabilityName }> = {};
  for (const type of workflow.capabilities) capabilities[type] = { type };
  return {
    catalogKey: `workflow:${workflow.name}`,
    providerCode,
    displayName: workflow.name,
    alias: workflow.name,
    defaultRealModelName: workflow.name,
    modelTypes: [...workflow.capabilities],
    ...(workflow.description ? { description: workflow.description } : {}),
    capabilities: capabilities as Capabilities,
    status: 'active',
    enabled: true,
  };
}

/**
 * Reads every `<name>.json` of the folder (a missing folder holds no workflows). A bad file
 * stops the start: a workflow that silently disappears would turn requests into 404s.
 */
export function loadWorkflows(dir: string): Workflow[] {
  let entries: string[];
  try {
    entries = fs.readdirSync(dir).filter((f) => f.endsWith('.json')).sort();
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw new WorkflowError(`workflows folder ${dir}: ${(err as Error).message}`);
  }
  const workflows: Workflow[] = [];
  const lines: string[] = [];
  for (const entry of entries) {
    const file = path.join(dir, entry);
    const name = entry.slice(0, -'.json'.length);
    if (!NAME.test(name)) {
      lines.push(`${file}: the name must be letters, digits, '.', '_' or '-'`);
      continue;
    }
    let data: unknown;
    try {
      data = JSON.parse(fs.readFileSync(file, 'utf8'));
    } catch (err) {
      lines.push(`${file}: not valid JSON (${(err as Error).message})`);
      continue;
    }
    const problems = workflowProblems(file, data);
    if (problems.length > 0) lines.push(...problems);
    else workflows.push({ ...(data as WorkflowFile), name });
  }
  if (lines.length > 0) throw new WorkflowError(`invalid workflow files\n${lines.join('\n')}`);
  return workflows;
}
