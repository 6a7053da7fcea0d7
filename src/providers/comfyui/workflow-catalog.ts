/**
 * Workflows: named ComfyUI API-format graphs with bindings from request fields to node
 * inputs, one JSON file per workflow (`<name>.json`) in the workflows folder. A request whose
 * `model` names a workflow (and no catalog alias) runs it on ComfyUI.
 */
import fs from 'node:fs';
import path from 'node:path';
import { Type, type Static } from 'typebox';
import { Value } from 'typebox/value';
import type { Logger } from 'pino';
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

  /** Every workflow as a live model, by name. */
  models(): LiveModel[] {
    return [...this.#byName.values()].map((entry) => entry.model);
  }

  get names(): string[] {
    return [...this.#byName.keys()];
  }
}

/** Image capability fields a workflow's bindings declare: its size, its number of images, its input images. */
function boundImageFields(workflow: Workflow): Record<string, unknown> {
  const bindings = workflow.bindings ?? {};
  const fields: Record<string, unknown> = {
    allow_custom_width_height_size: 'size' in bindings || ('width' in bindings && 'height' in bindings),
    output_multiple_images: 'n' in bindings,
  };
  const uploads = Object.entries(bindings).filter(([, list]) => list.some((b) => b.upload));
  if (uploads.length > 0) {
    const indexes = new Set(uploads.flatMap(([, list]) => list.filter((b) => b.upload).map((b) => b.index ?? 0)));
    fields.input_parameters = uploads.map(([field]) => ({ type: 'image', parameter: field }));
    fields.input_max_images_count = indexes.size;
    fields.input_multiple_images = indexes.size > 1;
  }
  return fields;
}

const IMAGE_CAPABILITIES: readonly string[] = ['image_generate', 'image_edit'];

function workflowModel(workflow: Workflow, providerCode: string): LiveModel {
  const capabilities: Record<string, { type: CapabilityName }> = {};
  for (const type of workflow.capabilities) capabilities[type] = { type, ...(IMAGE_CAPABILITIES.includes(type) ? boundImageFields(workflow) : {}) };
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

/** What the folder's workflow files are now: their names, sizes and modification times. */
function folderSignature(dir: string): string {
  let entries: string[];
  try {
    entries = fs.readdirSync(dir).filter((f) => f.endsWith('.json')).sort();
  } catch {
    return 'unreadable';
  }
  return entries.map((entry) => {
    try {
      const stat = fs.statSync(path.join(dir, entry));
      return `${entry}:${stat.size}:${stat.mtimeMs}`;
    } catch {
      return `${entry}:gone`;
    }
  }).join('|');
}

/**
 * The workflows folder as it is now: each use checks the files' names, sizes and modification
 * times and reads the folder again when they changed, so a new or changed workflow is served
 * without a restart. At start a bad file stops the gateway; later, a bad file leaves the
 * workflows as they were (the problem is logged) until the folder changes again.
 */
export class WorkflowFolder {
  #catalog: WorkflowCatalog;
  #signature: string;

  readonly dir: string;
  private readonly providerCode: string;
  private readonly logger: Logger;

  constructor(dir: string, providerCode: string, logger: Logger) {
    this.dir = dir;
    this.providerCode = providerCode;
    this.logger = logger;
    this.#signature = folderSignature(dir);
    this.#catalog = new WorkflowCatalog(loadWorkflows(dir), providerCode);
  }

  /** The workflows, read again first when the folder changed. */
  current(): WorkflowCatalog {
    const signature = folderSignature(this.dir);
    if (signature === this.#signature) return this.#catalog;
    this.#signature = signature;
    try {
      this.#catalog = new WorkflowCatalog(loadWorkflows(this.dir), this.providerCode);
      this.logger.info({ dir: this.dir, workflows: this.#catalog.names }, 'ComfyUI workflows reloaded');
    } catch (err) {
      this.logger.error({ dir: this.dir, err: (err as Error).message }, 'ComfyUI workflows folder changed with a bad file; the workflows stay as they were');
    }
    return this.#catalog;
  }
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
