/**
 * The task endpoints, one row each. Whatever lists endpoints reads this table: the task input
 * types of the adapter contract (providers/spec.ts), a task's output type
 * (tasks/generation-service.ts), fallback translation (routing/translate.ts), the usage meters
 * (limits/limits-service.ts), the local engine (providers/local/local-engine.ts) and the 3D
 * routes. docs/architecture.md, "Adding an endpoint", lists what else a new row needs.
 */
import type { Static, TSchema } from 'typebox';
import type { CAPABILITY_SCHEMA_KIND, CapabilityName, CapabilitySchemaKind } from '../catalog/schema.ts';
import { SongBody, SongInput, SpeechBody, SpeechInput } from './audio.ts';
import { DigitalHumanCreateInput, DigitalHumanGenerationBody, DigitalHumanGenerationInput } from './digital-human.ts';
import { ImageEditInput, ImageGenerationInput, ImagesEditJsonBody, ImagesGenerationBody, LegacyGenerationInput } from './images.ts';
import { EDIT_OPERATIONS, GENERATION_KINDS, MESH3D_EDIT_INPUTS, MESH3D_GENERATION_INPUTS } from './mesh3d.ts';
import { VideoGenerationBody, VideoGenerationInput } from './video.ts';

/** An HTTP route as the usage ledger names it: method and path pattern. */
export type Route = `POST /${string}`;

/** The path of a route, as Fastify registers it. */
export function routePath(route: Route): string {
  return route.slice(route.indexOf(' ') + 1);
}

/** What a task's outputs are (its output_type). */
export type OutputType = 'image' | 'video' | 'audio' | 'text' | '3d';

/**
 * What the input of a task tells it uses, priced at its end: the seconds of media it asks for
 * (`duration`), or the characters it reads out. The images a task made count for every endpoint
 * (a song's cover, a model's preview too).
 */
export type UsageMeter = 'seconds' | 'characters';

/** The capabilities whose catalog schema is of kind K. */
type CapabilityOfKind<K extends CapabilitySchemaKind> = { [C in CapabilityName]: (typeof CAPABILITY_SCHEMA_KIND)[C] extends K ? C : never }[CapabilityName];

/**
 * How an input is fitted to a fallback model's capabilities (routing/translate.ts holds the
 * fitter of each): image sizes, ratios and counts; video content, durations and ratios; song
 * options; speech voice, volume and format; 3D generation fields and views; 3D edit operations.
 */
export type FallbackFit = 'image' | 'video' | 'song' | 'speech' | 'mesh3d-generation' | 'mesh3d-edit';

/** The handler modules of the built-in engine (providers/local/local-engine.ts loads each on first use). */
export type LocalHandlerKey = 'generate-image' | 'edit-image' | 'generate-video' | 'generate-song' | 'generate-speech' | 'create-digital-human' | 'lip-sync-video' | 'mesh';

/** The tools of the gateway's MCP server that submit tasks (src/mcp/gateway-tools.ts); a tool covers one or more endpoints. */
export type GatewayToolName = 'generate_image' | 'edit_image' | 'generate_video' | 'generate_music' | 'generate_speech' | 'generate_digital_human_video' | 'generate_3d' | 'edit_3d';

/**
 * The MCP tool that submits an endpoint's tasks: its name, the JSON body of the endpoint's route
 * (the tool's arguments), and for a tool of several endpoints the value of the argument that
 * picks this one (`mode` of generate_3d, `operation` of edit_3d).
 */
export interface EndpointTool {
  name: GatewayToolName;
  body: TSchema;
  choice?: { argument: 'mode' | 'operation'; value: string };
}

export interface EndpointRow {
  /** The routes whose calls become tasks of the endpoint. */
  routes: readonly Route[];
  /** The task input: what the endpoint's service stores and its engine receives. */
  input: TSchema;
  /** A model runs the endpoint's tasks (a fallback model too) when it has one of these capability types. */
  capabilities: readonly CapabilityName[];
  output: OutputType;
  meter?: UsageMeter;
  /** Absent: the capability type alone decides, there is nothing to fit. */
  fallbackFit?: FallbackFit;
  /** What the built-in engine runs for it. */
  local: LocalHandlerKey;
  /** Its MCP tool; absent, the endpoint has none. */
  tool?: EndpointTool;
}

const mesh3dGeneration = <Kind extends keyof typeof MESH3D_GENERATION_INPUTS>(kind: Kind, capability: CapabilityOfKind<'model3d'>) =>
  ({
    routes: [`POST /v1/mesh3d/generate/${kind}`], input: MESH3D_GENERATION_INPUTS[kind], capabilities: [capability], output: '3d', fallbackFit: 'mesh3d-generation', local: 'mesh',
    tool: { name: 'generate_3d', body: GENERATION_KINDS[kind], choice: { argument: 'mode', value: kind } },
  }) as const;

const mesh3dEdit = <Op extends keyof typeof MESH3D_EDIT_INPUTS>(op: Op, path: string) =>
  ({
    routes: [`POST /v1/mesh3d/edit/${path}`], input: MESH3D_EDIT_INPUTS[op], capabilities: ['mesh_edit'], output: '3d', fallbackFit: 'mesh3d-edit', local: 'mesh',
    tool: { name: 'edit_3d', body: EDIT_OPERATIONS[op], choice: { argument: 'operation', value: op } },
  }) as const;

const TABLE = {
  'images.generations': {
    routes: ['POST /v1/images/generations', 'POST /openai/v1/images/generations'],
    input: ImageGenerationInput,
    capabilities: ['image_generate'],
    output: 'image',
    fallbackFit: 'image',
    local: 'generate-image',
    tool: { name: 'generate_image', body: ImagesGenerationBody },
  },
  'ai.generations': {
    routes: ['POST /v1/ai/generations'],
    input: LegacyGenerationInput,
    capabilities: ['image_generate'],
    output: 'image',
    fallbackFit: 'image',
    local: 'generate-image',
  },
  'images.edits': {
    routes: ['POST /v1/images/edits', 'POST /openai/v1/images/edits'],
    input: ImageEditInput,
    capabilities: ['image_edit'],
    output: 'image',
    fallbackFit: 'image',
    local: 'edit-image',
    tool: { name: 'edit_image', body: ImagesEditJsonBody },
  },
  'video.generations': {
    routes: ['POST /v1/video/generations'],
    input: VideoGenerationInput,
    capabilities: ['video_generate', 'image_to_video', 'omni_video'],
    output: 'video',
    meter: 'seconds',
    fallbackFit: 'video',
    local: 'generate-video',
    tool: { name: 'generate_video', body: VideoGenerationBody },
  },
  'song.generations': {
    routes: ['POST /v1/song/generations'],
    input: SongInput,
    capabilities: ['audio_generate'],
    output: 'audio',
    meter: 'seconds',
    fallbackFit: 'song',
    local: 'generate-song',
    tool: { name: 'generate_music', body: SongBody },
  },
  'speech.generations': {
    routes: ['POST /v1/speech/generations', 'POST /v1/audio/speech', 'POST /openai/v1/audio/speech'],
    input: SpeechInput,
    capabilities: ['text_to_speech'],
    output: 'audio',
    meter: 'characters',
    fallbackFit: 'speech',
    local: 'generate-speech',
    tool: { name: 'generate_speech', body: SpeechBody },
  },
  'digital-human.create': {
    routes: ['POST /v1/digital-human/create'],
    input: DigitalHumanCreateInput,
    capabilities: ['digital_human_generate'],
    output: 'text',
    local: 'create-digital-human',
  },
  'digital-human.generations': {
    routes: ['POST /v1/digital-human/generations'],
    input: DigitalHumanGenerationInput,
    capabilities: ['digital_human_generate'],
    output: 'video',
    meter: 'seconds',
    local: 'lip-sync-video',
    tool: { name: 'generate_digital_human_video', body: DigitalHumanGenerationBody },
  },
  'mesh3d.generate.text': mesh3dGeneration('text', 'text_to_model'),
  'mesh3d.generate.image': mesh3dGeneration('image', 'image_to_model'),
  'mesh3d.generate.multiview': mesh3dGeneration('multiview', 'multiview_to_model'),
  'mesh3d.edit.segmentation': mesh3dEdit('segmentation', 'segmentation'),
  'mesh3d.edit.completion': mesh3dEdit('completion', 'completion'),
  'mesh3d.edit.smart_lowpoly': mesh3dEdit('smart_lowpoly', 'smart-lowpoly'),
  'mesh3d.edit.texture': mesh3dEdit('texture', 'texture'),
  'mesh3d.edit.convert': mesh3dEdit('convert', 'convert'),
  'mesh3d.edit.check_riggable': mesh3dEdit('check_riggable', 'check-riggable'),
  'mesh3d.edit.rig': mesh3dEdit('rig', 'rig'),
  'mesh3d.edit.retarget_animation': mesh3dEdit('retarget_animation', 'retarget-animation'),
  'mesh3d.edit.refine': mesh3dEdit('refine', 'refine'),
  'mesh3d.edit.stylize': mesh3dEdit('stylize', 'stylize'),
} as const satisfies Record<string, EndpointRow>;

/** A task endpoint, e.g. `images.generations`. */
export type Endpoint = keyof typeof TABLE;

/** The task input of each endpoint: what its service stores and its engine receives. */
export type TaskInputs = { [E in Endpoint]: Static<(typeof TABLE)[E]['input']> };

/** The local handler of each endpoint. */
export type LocalHandlerKeys = { [E in Endpoint]: (typeof TABLE)[E]['local'] };

/** The rows by endpoint; a name outside the table is a type error. */
export const ENDPOINTS: { readonly [E in Endpoint]: EndpointRow } = TABLE;

/** Every endpoint, in the table's order. */
export const ENDPOINT_NAMES = Object.keys(TABLE) as Endpoint[];

/** The row of an endpoint read from a stored task; throws for a name the table lacks. */
export function storedEndpoint(name: string): EndpointRow {
  if (!Object.hasOwn(TABLE, name)) throw new Error(`${name} is not a task endpoint`);
  return ENDPOINTS[name as Endpoint];
}
