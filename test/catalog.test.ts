import assert from 'node:assert/strict';
import { CLI_ARGS } from './support/typescript-loader.ts';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import {
  BUILTIN_CATALOG_PATH,
  CAPABILITY_NAMES,
  Catalog,
  CatalogError,
  loadCatalog,
  readCatalogFile,
  type CatalogDocument,
} from '../src/catalog/catalog.ts';
import { toCompatItem, toPlatformItem } from '../src/catalog/listing.ts';
import { catalogSchema, validateCatalog } from '../src/catalog/schema.ts';
import { runCatalogValidate } from '../src/catalog/validate-command.ts';
import type { GengateConfig } from '../src/config/settings.ts';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const EVERY_FIELD_PATH = fileURLToPath(new URL('./fixtures/catalog/every-field.json', import.meta.url));

// Loose access for mutating test documents.
type Json = any; // eslint-disable-line @typescript-eslint/no-explicit-any

function readJson(file: string): Json {
  return JSON.parse(readFileSync(file, 'utf8'));
}

const builtin: Json = readJson(BUILTIN_CATALOG_PATH);
/** One model per capability schema, each declaring every field of its schema (valid as is). */
const everyField: Json = readJson(EVERY_FIELD_PATH);

function modelIndex(doc: Json, alias: string): number {
  const index = doc.baseModels.findIndex((m: Json) => m.alias === alias);
  assert.ok(index >= 0, `fixture has no model ${alias}`);
  return index;
}

/** `$.baseModels[i].capabilities.<cap>` of the every-field fixture. */
function capPath(alias: string, cap: string): string {
  return `$.baseModels[${modelIndex(everyField, alias)}].capabilities.${cap}`;
}

function cap(doc: Json, alias: string, name: string): Json {
  return doc.baseModels[modelIndex(doc, alias)].capabilities[name];
}

function tempFile(name: string, content: string): string {
  const dir = mkdtempSync(path.join(tmpdir(), 'gengate-catalog-'));
  const file = path.join(dir, name);
  writeFileSync(file, content);
  return file;
}

describe('catalog schema: valid documents', () => {
  it('accepts the built-in catalog', () => {
    assert.deepEqual(validateCatalog(builtin), []);
  });

  it('accepts the every-field fixture', () => {
    assert.deepEqual(validateCatalog(everyField), []);
  });

  it('the every-field fixture really uses every field the schema knows, for every capability name', () => {
    const capabilitySchemas = (catalogSchema as Json).properties.baseModels.items.properties.capabilities.properties;
    const declared = new Map<string, Json>();
    for (const model of everyField.baseModels) {
      for (const [name, value] of Object.entries(model.capabilities)) declared.set(name, value);
    }
    assert.deepEqual([...declared.keys()].sort(), [...CAPABILITY_NAMES].sort());
    for (const name of CAPABILITY_NAMES) {
      const fields = Object.keys(capabilitySchemas[name].properties).sort();
      assert.deepEqual(Object.keys(declared.get(name)).sort(), fields, `fields of ${name}`);
    }
  });
});

interface NegativeCase {
  name: string;
  mutate: (doc: Json) => void;
  /** Path the single error line must start with. */
  path: string | (() => string);
  /** Part of the message after the path, when it matters. */
  message?: RegExp;
  /** Start from the built-in catalog instead of the every-field fixture. */
  base?: 'builtin';
  /** Validate this value instead of a mutated document. */
  replaceWith?: unknown;
}

const V = () => capPath('video', 'video_generate');
const D = () => `${V()}.draft_mode`;
const M3 = () => capPath('model3d', 'text_to_model');
const TTS = () => capPath('speech', 'text_to_speech');
const ME = () => capPath('mesh-edit', 'mesh_edit');
const LANG = () => capPath('language', 'text_generate');
const IMG = () => capPath('image', 'image_generate');
const vid = (d: Json) => cap(d, 'video', 'video_generate');
const draft = (d: Json) => vid(d).draft_mode;
const m3 = (d: Json) => cap(d, 'model3d', 'text_to_model');
const tts = (d: Json) => cap(d, 'speech', 'text_to_speech');
const lang = (d: Json) => cap(d, 'language', 'text_generate');
const img = (d: Json) => cap(d, 'image', 'image_generate');
const media = (d: Json) => vid(d).input_media_constraints.video;

/** Draft object switched to contract version 1 (valid) so a single rule can then be broken. */
function draftV1(d: Json): Json {
  Object.assign(draft(d), { contract_version: 1, draft_resolution: '480p', final_resolutions: ['1080p'], validity_seconds: 604800 });
  delete draft(d).finalization_protocol;
  return draft(d);
}

const NEGATIVE_CASES: NegativeCase[] = [
  // top level
  { name: 'extra top-level key', mutate: (d) => (d.bogus = 1), path: '$.bogus', message: /^unknown key$/ },
  { name: 'schemaVersion not 1', mutate: (d) => (d.schemaVersion = 2), path: '$.schemaVersion', message: /must be 1/ },
  { name: 'schemaVersion missing', mutate: (d) => delete d.schemaVersion, path: '$.schemaVersion', message: /required/ },
  { name: 'providers missing', mutate: (d) => delete d.providers, path: '$.providers', message: /required/ },
  { name: 'providers empty', mutate: (d) => (d.providers = []), path: '$.providers', message: /at least 1 item/ },
  { name: 'providers not an array', mutate: (d) => (d.providers = {}), path: '$.providers', message: /must be an array/ },
  { name: 'baseModels empty', mutate: (d) => (d.baseModels = []), path: '$.baseModels', message: /at least 1 item/ },
  { name: 'baseModels missing', mutate: (d) => delete d.baseModels, path: '$.baseModels', message: /required/ },
  { name: 'document not an object', mutate: () => undefined, replaceWith: [], path: '$', message: /must be an object/ },
  // provider
  { name: 'provider extra key', mutate: (d) => (d.providers[0].url = 'x'), path: '$.providers[0].url', message: /unknown key/ },
  { name: 'provider code empty', mutate: (d) => (d.providers[0].code = ''), path: '$.providers[0].code', message: /must not be empty/ },
  { name: 'provider name missing', mutate: (d) => delete d.providers[0].name, path: '$.providers[0].name', message: /required/ },
  { name: 'provider displayName missing', mutate: (d) => delete d.providers[0].displayName, path: '$.providers[0].displayName' },
  { name: 'provider displayName not a string', mutate: (d) => (d.providers[0].displayName = 3), path: '$.providers[0].displayName', message: /must be a string/ },
  { name: 'provider iconPath empty', mutate: (d) => (d.providers[0].iconPath = ''), path: '$.providers[0].iconPath' },
  // base model
  { name: 'base model extra key', mutate: (d) => (d.baseModels[0].price = 1), path: '$.baseModels[0].price', message: /unknown key/ },
  { name: 'base model not an object', mutate: (d) => (d.baseModels[1] = 'gpt'), path: '$.baseModels[1]', message: /must be an object/ },
  { name: 'catalogKey with another namespace', mutate: (d) => (d.baseModels[0].catalogKey = 'base:other:x'), path: '$.baseModels[0].catalogKey', message: /base:runtime:<text> or base:seed:<text>/ },
  { name: 'catalogKey with no text', mutate: (d) => (d.baseModels[0].catalogKey = 'base:seed:'), path: '$.baseModels[0].catalogKey' },
  { name: 'catalogKey missing', mutate: (d) => delete d.baseModels[0].catalogKey, path: '$.baseModels[0].catalogKey', message: /required/ },
  { name: 'seedKey empty', mutate: (d) => (d.baseModels[0].seedKey = ''), path: '$.baseModels[0].seedKey' },
  { name: 'providerCode empty', mutate: (d) => (d.baseModels[0].providerCode = ''), path: '$.baseModels[0].providerCode' },
  { name: 'providerCode missing', mutate: (d) => delete d.baseModels[0].providerCode, path: '$.baseModels[0].providerCode' },
  { name: 'displayName missing', mutate: (d) => delete d.baseModels[0].displayName, path: '$.baseModels[0].displayName' },
  { name: 'alias empty', mutate: (d) => (d.baseModels[0].alias = ''), path: '$.baseModels[0].alias', message: /must not be empty/ },
  { name: 'alias missing', mutate: (d) => delete d.baseModels[0].alias, path: '$.baseModels[0].alias' },
  { name: 'defaultRealModelName missing', mutate: (d) => delete d.baseModels[0].defaultRealModelName, path: '$.baseModels[0].defaultRealModelName' },
  { name: 'defaultRealModelName empty', mutate: (d) => (d.baseModels[0].defaultRealModelName = ''), path: '$.baseModels[0].defaultRealModelName' },
  { name: 'modelTypes empty', mutate: (d) => (d.baseModels[0].modelTypes = []), path: '$.baseModels[0].modelTypes', message: /at least 1 item/ },
  { name: 'modelTypes missing', mutate: (d) => delete d.baseModels[0].modelTypes, path: '$.baseModels[0].modelTypes' },
  { name: 'modelTypes duplicate', mutate: (d) => (d.baseModels[0].modelTypes = ['text_generate', 'text_generate']), path: '$.baseModels[0].modelTypes[1]', message: /duplicate of item \[0\]/ },
  { name: 'modelTypes not a capability name', mutate: (d) => d.baseModels[0].modelTypes.push('video_edit'), path: '$.baseModels[0].modelTypes[6]', message: /not a capability name/ },
  { name: 'iconPath empty', mutate: (d) => (d.baseModels[0].iconPath = ''), path: '$.baseModels[0].iconPath' },
  { name: 'description empty', mutate: (d) => (d.baseModels[0].description = ''), path: '$.baseModels[0].description' },
  { name: 'status unknown', mutate: (d) => (d.baseModels[0].status = 'retired'), path: '$.baseModels[0].status', message: /"active", "deprecated", "offline"/ },
  { name: 'status missing', mutate: (d) => delete d.baseModels[0].status, path: '$.baseModels[0].status' },
  { name: 'capabilities missing', mutate: (d) => delete d.baseModels[0].capabilities, path: '$.baseModels[0].capabilities' },
  { name: 'capabilities empty', mutate: (d) => (d.baseModels[1].capabilities = {}), path: '$.baseModels[1].capabilities', message: /at least 1 key/ },
  { name: 'capabilities key not a capability name', mutate: (d) => (d.baseModels[1].capabilities.video_edit = { type: 'video_edit' }), path: '$.baseModels[1].capabilities.video_edit', message: /unknown key \(not a capability name\)/ },
  { name: 'alias used twice', mutate: (d) => (d.baseModels[3].alias = d.baseModels[1].alias), path: '$.baseModels[3].alias', message: /duplicate alias "embedding" \(also \$\.baseModels\[1\]\.alias\)/ },
  // every capability object
  { name: 'capability type missing', mutate: (d) => delete lang(d).type, path: () => `${LANG()}.type`, message: /required/ },
  { name: 'capability type not its own key', mutate: (d) => (lang(d).type = 'tools_call'), path: () => `${LANG()}.type`, message: /must be "text_generate"/ },
  { name: 'capability value not an object', mutate: (d) => (d.baseModels[0].capabilities.omni = true), path: () => capPath('language', 'omni'), message: /must be an object/ },
  { name: 'type-only capability with a field', mutate: (d) => (cap(d, 'digital-human', 'digital_human_generate').mode = 'lite'), path: () => `${capPath('digital-human', 'digital_human_generate')}.mode`, message: /unknown key/ },
  { name: 'capability extra key (image)', mutate: (d) => (img(d).bogus = true), path: () => `${IMG()}.bogus`, message: /^unknown key$/ },
  // language
  { name: 'language NNI negative', mutate: (d) => (lang(d).max_context_tokens = -1), path: () => `${LANG()}.max_context_tokens`, message: /must be >= 0/ },
  { name: 'language NNI not an integer', mutate: (d) => (lang(d).max_output_tokens = 1.5), path: () => `${LANG()}.max_output_tokens`, message: /must be an integer/ },
  { name: 'language max_thinking_tokens as string', mutate: (d) => (lang(d).max_thinking_tokens = '4096'), path: () => `${LANG()}.max_thinking_tokens` },
  { name: 'outputTokenLimitScope enum', mutate: (d) => (lang(d).outputTokenLimitScope = 'all'), path: () => `${LANG()}.outputTokenLimitScope`, message: /"total", "answer_only"/ },
  { name: 'outputTokenParameter enum', mutate: (d) => (lang(d).outputTokenParameter = 'max_output_tokens'), path: () => `${LANG()}.outputTokenParameter` },
  { name: 'defaultOutputTokenBudget const', mutate: (d) => (lang(d).defaultOutputTokenBudget = 'max'), path: () => `${LANG()}.defaultOutputTokenBudget`, message: /"candidate_max"/ },
  { name: 'language boolean', mutate: (d) => (lang(d).supportThinking = 'yes'), path: () => `${LANG()}.supportThinking`, message: /must be a boolean/ },
  { name: 'numberRange too short', mutate: (d) => (lang(d).thinkingBudgetTokensRange = [1]), path: () => `${LANG()}.thinkingBudgetTokensRange`, message: /exactly 2 numbers/ },
  { name: 'numberRange too long', mutate: (d) => (lang(d).thinkingBudgetTokensRange = [1, 2, 3]), path: () => `${LANG()}.thinkingBudgetTokensRange`, message: /exactly 2 numbers/ },
  { name: 'numberRange with a string', mutate: (d) => (lang(d).thinkingBudgetTokensRange = [1, '2']), path: () => `${LANG()}.thinkingBudgetTokensRange[1]`, message: /must be a number/ },
  { name: 'numberRange not an array', mutate: (d) => (lang(d).thinkingBudgetTokensRange = { min: 1, max: 2 }), path: () => `${LANG()}.thinkingBudgetTokensRange`, message: /exactly 2 numbers/ },
  { name: 'stringList duplicate', mutate: (d) => (lang(d).thinkingEffortLevels = ['low', 'low']), path: () => `${LANG()}.thinkingEffortLevels[1]`, message: /duplicate/ },
  { name: 'stringList empty string', mutate: (d) => (lang(d).supportedApiProtocols = ['']), path: () => `${LANG()}.supportedApiProtocols[0]`, message: /must not be empty/ },
  { name: 'language extra key', mutate: (d) => (cap(d, 'language', 'audio_understanding').max_audio_seconds = 60), path: () => `${capPath('language', 'audio_understanding')}.max_audio_seconds` },
  // embedding, rerank
  { name: 'embedding dimension not PI', mutate: (d) => (cap(d, 'embedding', 'text_embedding').dimensions = [0, 256]), path: () => `${capPath('embedding', 'text_embedding')}.dimensions[0]`, message: /must be >= 1/ },
  { name: 'embedding dimensions duplicate', mutate: (d) => (cap(d, 'embedding', 'text_embedding').dimensions = [256, 256]), path: () => `${capPath('embedding', 'text_embedding')}.dimensions[1]` },
  { name: 'rerank PI zero', mutate: (d) => (cap(d, 'rerank', 'text_rerank').maxDocuments = 0), path: () => `${capPath('rerank', 'text_rerank')}.maxDocuments`, message: /must be >= 1/ },
  { name: 'rerank boolean', mutate: (d) => (cap(d, 'rerank', 'text_rerank').supportTopN = 1), path: () => `${capPath('rerank', 'text_rerank')}.supportTopN` },
  // image
  { name: 'image input_parameters item missing parameter', mutate: (d) => delete cap(d, 'image', 'image_edit').input_parameters[0].parameter, path: () => `${capPath('image', 'image_edit')}.input_parameters[0].parameter`, message: /required/ },
  { name: 'image input_parameters item extra key', mutate: (d) => (img(d).input_parameters[0].max = 4), path: () => `${IMG()}.input_parameters[0].max` },
  { name: 'image width_height_multiple not PI', mutate: (d) => (img(d).width_height_multiple = 0), path: () => `${IMG()}.width_height_multiple` },
  { name: 'image NNI negative', mutate: (d) => (img(d).output_max_images_count = -1), path: () => `${IMG()}.output_max_images_count` },
  { name: 'image size_param_format not a string', mutate: (d) => (img(d).size_param_format = 5), path: () => `${IMG()}.size_param_format` },
  { name: 'image width_height_range not a range', mutate: (d) => (img(d).width_height_range = [256]), path: () => `${IMG()}.width_height_range` },
  { name: 'image aspect_ratio_allowed duplicate', mutate: (d) => (img(d).aspect_ratio_allowed = ['1:1', '1:1']), path: () => `${IMG()}.aspect_ratio_allowed[1]` },
  // video
  { name: 'mapOrList a string', mutate: (d) => (vid(d).aspect_ratio_allowed = '16:9'), path: () => `${V()}.aspect_ratio_allowed`, message: /list of strings or an object of such lists/ },
  { name: 'mapOrList empty object', mutate: (d) => (vid(d).output_resolutions = {}), path: () => `${V()}.output_resolutions`, message: /at least 1 key/ },
  { name: 'mapOrList object value not a list', mutate: (d) => (vid(d).output_resolutions = { std: '720p' }), path: () => `${V()}.output_resolutions.std`, message: /must be an array/ },
  { name: 'mapOrList list item of the wrong type', mutate: (d) => (vid(d).size_allowed = ['1280x720', 720]), path: () => `${V()}.size_allowed[1]`, message: /must be a string/ },
  { name: 'duration_options item not a number', mutate: (d) => (vid(d).duration_options = [5, 'ten']), path: () => `${V()}.duration_options[1]`, message: /must be a number/ },
  { name: 'duration_range object value not a range', mutate: (d) => (vid(d).duration_range = { std: [2] }), path: () => `${V()}.duration_range.std`, message: /exactly 2 numbers/ },
  { name: 'duration_range a number', mutate: (d) => (vid(d).duration_range = 5), path: () => `${V()}.duration_range`, message: /exactly 2 numbers or an object/ },
  { name: 'duration_range list of 3', mutate: (d) => (vid(d).duration_range = [1, 2, 3]), path: () => `${V()}.duration_range`, message: /exactly 2 numbers/ },
  { name: 'video boolean', mutate: (d) => (vid(d).output_audio = 'on'), path: () => `${V()}.output_audio` },
  { name: 'video number at least 0', mutate: (d) => (vid(d).input_size_limit = -1), path: () => `${V()}.input_size_limit`, message: /must be >= 0/ },
  { name: 'video NNI', mutate: (d) => (vid(d).max_videos = 1.5), path: () => `${V()}.max_videos`, message: /integer/ },
  { name: 'video string', mutate: (d) => (vid(d).output_audio_mode = 1), path: () => `${V()}.output_audio_mode` },
  { name: 'video stringList duplicate', mutate: (d) => (vid(d).supported_modes = ['std', 'std']), path: () => `${V()}.supported_modes[1]` },
  { name: 'video extra key (omni_video)', mutate: (d) => (cap(d, 'video', 'omni_video').camera_control = true), path: () => `${capPath('video', 'omni_video')}.camera_control` },
  { name: 'input_media_constraints without max_request_size_mb', mutate: (d) => delete vid(d).input_media_constraints.max_request_size_mb, path: () => `${V()}.input_media_constraints.max_request_size_mb`, message: /required/ },
  { name: 'input_media_constraints extra key', mutate: (d) => (vid(d).input_media_constraints.document = {}), path: () => `${V()}.input_media_constraints.document` },
  { name: 'media constraint extra key', mutate: (d) => (media(d).bitrate = 1), path: () => `${V()}.input_media_constraints.video.bitrate` },
  { name: 'media constraint NNI', mutate: (d) => (media(d).max_count = -1), path: () => `${V()}.input_media_constraints.video.max_count` },
  { name: 'media constraint number at least 0', mutate: (d) => (media(d).max_size_mb = -0.5), path: () => `${V()}.input_media_constraints.video.max_size_mb` },
  { name: 'media constraint range', mutate: (d) => (media(d).fps_range = [24]), path: () => `${V()}.input_media_constraints.video.fps_range` },
  { name: 'media constraint boolean', mutate: (d) => (media(d).requires_visual_reference = 'no'), path: () => `${V()}.input_media_constraints.video.requires_visual_reference` },
  { name: 'media constraint codecs duplicate', mutate: (d) => (media(d).codecs = ['h264', 'h264']), path: () => `${V()}.input_media_constraints.video.codecs[1]` },
  { name: 'limits_with_video extra key', mutate: (d) => (vid(d).limits_with_video.max_videos = 1), path: () => `${V()}.limits_with_video.max_videos` },
  { name: 'limits_with_video NNI', mutate: (d) => (vid(d).limits_with_video.max_images_and_elements = -1), path: () => `${V()}.limits_with_video.max_images_and_elements` },
  { name: 'limits_with_video duration_options', mutate: (d) => (vid(d).limits_with_video.duration_options = ['5']), path: () => `${V()}.limits_with_video.duration_options[0]` },
  { name: 'mode_constraints empty', mutate: (d) => (vid(d).mode_constraints = {}), path: () => `${V()}.mode_constraints`, message: /at least 1 key/ },
  { name: 'mode_constraints entry extra key', mutate: (d) => (vid(d).mode_constraints.std.max_duration = 5), path: () => `${V()}.mode_constraints.std.max_duration` },
  { name: 'mode_constraints prompt_required', mutate: (d) => (vid(d).mode_constraints.std.prompt_required = 'yes'), path: () => `${V()}.mode_constraints.std.prompt_required` },
  { name: 'prompt_length_limit without max', mutate: (d) => delete vid(d).prompt_length_limit.max, path: () => `${V()}.prompt_length_limit.max`, message: /required/ },
  { name: 'prompt_length_limit max not PI', mutate: (d) => (vid(d).prompt_length_limit.max = 0), path: () => `${V()}.prompt_length_limit.max` },
  { name: 'prompt_length_limit extra key', mutate: (d) => (vid(d).prompt_length_limit.min = 1), path: () => `${V()}.prompt_length_limit.min` },
  { name: 'provider_operations extra key', mutate: (d) => (vid(d).provider_operations.upscale = true), path: () => `${V()}.provider_operations.upscale` },
  { name: 'provider_operations.context_ir boolean', mutate: (d) => (vid(d).provider_operations.context_ir = 1), path: () => `${V()}.provider_operations.context_ir` },
  { name: 'regeneration without target_resolutions', mutate: (d) => delete vid(d).provider_operations.regeneration.target_resolutions, path: () => `${V()}.provider_operations.regeneration.target_resolutions` },
  { name: 'regeneration source_fps negative', mutate: (d) => (vid(d).provider_operations.regeneration.source_fps = -24), path: () => `${V()}.provider_operations.regeneration.source_fps` },
  { name: 'regeneration extra key', mutate: (d) => (vid(d).provider_operations.regeneration.target_fps = 24), path: () => `${V()}.provider_operations.regeneration.target_fps` },
  { name: 'resolution_routes empty', mutate: (d) => (vid(d).resolution_routes = {}), path: () => `${V()}.resolution_routes` },
  { name: 'resolution route missing billing_mode', mutate: (d) => delete vid(d).resolution_routes['1440p'].billing_mode, path: () => `${V()}.resolution_routes["1440p"].billing_mode`, message: /required/ },
  { name: 'resolution route field not a string', mutate: (d) => (vid(d).resolution_routes['1440p'].mode = 2), path: () => `${V()}.resolution_routes["1440p"].mode` },
  { name: 'resolution route extra key', mutate: (d) => (vid(d).resolution_routes['1440p'].price = 2), path: () => `${V()}.resolution_routes["1440p"].price` },
  // draft object
  { name: 'draft extra key', mutate: (d) => (draft(d).preview = true), path: () => `${D()}.preview` },
  { name: 'draft enabled missing', mutate: (d) => delete draft(d).enabled, path: () => `${D()}.enabled`, message: /required/ },
  { name: 'draft input_modes missing', mutate: (d) => delete draft(d).input_modes, path: () => `${D()}.input_modes` },
  { name: 'draft validity_seconds negative', mutate: (d) => (draft(d).validity_seconds = -1), path: () => `${D()}.validity_seconds` },
  { name: 'draft contract_version 3', mutate: (d) => (draft(d).contract_version = 3), path: () => `${D()}.contract_version`, message: /1, 2/ },
  { name: 'draft contract 1 validity not 604800', mutate: (d) => (draftV1(d).validity_seconds = 3600), path: () => `${D()}.validity_seconds`, message: /604800 when contract_version is 1/ },
  { name: 'draft contract 1 with a 720p draft', mutate: (d) => (draftV1(d).draft_resolution = '720p'), path: () => `${D()}.draft_resolution`, message: /"480p" when contract_version is 1/ },
  { name: 'draft contract 1 with a 1440p final', mutate: (d) => (draftV1(d).final_resolutions = ['1440p']), path: () => `${D()}.final_resolutions`, message: /\["1080p"\] when contract_version is 1/ },
  { name: 'draft contract 2 without finalization_protocol', mutate: (d) => delete draft(d).finalization_protocol, path: () => `${D()}.finalization_protocol`, message: /required when contract_version is 2/ },
  { name: 'draft contract 2 with a 480p draft', mutate: (d) => (draft(d).draft_resolution = '480p'), path: () => `${D()}.draft_resolution`, message: /"720p" when contract_version is 2/ },
  { name: 'draft contract 2 with a 1080p final', mutate: (d) => (draft(d).final_resolutions = ['1080p']), path: () => `${D()}.final_resolutions`, message: /\["1440p"\] when contract_version is 2/ },
  { name: 'draft finalization_protocol unknown', mutate: (d) => (draft(d).finalization_protocol = 'vendor_context'), path: () => `${D()}.finalization_protocol`, message: /vendor_h3_media_context/ },
  { name: 'draft final_resolutions empty', mutate: (d) => (draft(d).final_resolutions = []), path: () => `${D()}.final_resolutions`, message: /exactly 1 value/ },
  { name: 'draft final_resolutions with two values', mutate: (d) => (draft(d).final_resolutions = ['1440p', '1080p']), path: () => `${D()}.final_resolutions`, message: /exactly 1 value/ },
  { name: 'draft final resolution unknown', mutate: (d) => (draft(d).final_resolutions = ['2160p']), path: () => `${D()}.final_resolutions[0]` },
  { name: 'draft resolution unknown', mutate: (d) => (draft(d).draft_resolution = '360p'), path: () => `${D()}.draft_resolution`, message: /"480p", "720p"/ },
  // model3d
  { name: 'face_limit_range.min negative', mutate: (d) => (m3(d).face_limit_range.min = -1), path: () => `${M3()}.face_limit_range.min`, message: /must be >= 0/ },
  { name: 'face_limit_range without max', mutate: (d) => delete m3(d).face_limit_range.max, path: () => `${M3()}.face_limit_range.max`, message: /required/ },
  { name: 'face_limit_range extra key', mutate: (d) => (m3(d).face_limit_range.default = 10000), path: () => `${M3()}.face_limit_range.default` },
  { name: 'face_limit_range_by_topology range value', mutate: (d) => (m3(d).face_limit_range_by_topology.quad.max = 'many'), path: () => `${M3()}.face_limit_range_by_topology.quad.max` },
  { name: 'face_limit_range_by_topology range extra key', mutate: (d) => (m3(d).face_limit_range_by_topology.quad.step = 1), path: () => `${M3()}.face_limit_range_by_topology.quad.step` },
  { name: 'face_limit_by_geometry_quality empty', mutate: (d) => (m3(d).face_limit_by_geometry_quality = {}), path: () => `${M3()}.face_limit_by_geometry_quality`, message: /at least 1 key/ },
  { name: 'face_limit_by_geometry_quality extra key', mutate: (d) => (m3(d).face_limit_by_geometry_quality.detailed.ngon = 5), path: () => `${M3()}.face_limit_by_geometry_quality.detailed.ngon` },
  { name: 'face_limit_by_geometry_quality NNI', mutate: (d) => (m3(d).face_limit_by_geometry_quality.detailed.triangle = -5), path: () => `${M3()}.face_limit_by_geometry_quality.detailed.triangle` },
  { name: 'multiview_input without views', mutate: (d) => delete m3(d).multiview_input.views, path: () => `${M3()}.multiview_input.views`, message: /required/ },
  { name: 'multiview_input without min_images', mutate: (d) => delete m3(d).multiview_input.min_images, path: () => `${M3()}.multiview_input.min_images` },
  { name: 'multiview_input max_images NNI', mutate: (d) => (m3(d).multiview_input.max_images = -4), path: () => `${M3()}.multiview_input.max_images` },
  { name: 'multiview_input extra key', mutate: (d) => (m3(d).multiview_input.orthographic = true), path: () => `${M3()}.multiview_input.orthographic` },
  { name: 'view without order', mutate: (d) => delete m3(d).multiview_input.views[0].order, path: () => `${M3()}.multiview_input.views[0].order` },
  { name: 'view without type', mutate: (d) => delete m3(d).multiview_input.views[2].type, path: () => `${M3()}.multiview_input.views[2].type` },
  { name: 'view required not a boolean', mutate: (d) => (m3(d).multiview_input.views[0].required = 'yes'), path: () => `${M3()}.multiview_input.views[0].required` },
  { name: 'view extra key', mutate: (d) => (m3(d).multiview_input.views[1].angle = 90), path: () => `${M3()}.multiview_input.views[1].angle` },
  { name: 'file_constraints extra key', mutate: (d) => (m3(d).multiview_input.file_constraints.max_files = 4), path: () => `${M3()}.multiview_input.file_constraints.max_files` },
  { name: 'file_constraints NNI', mutate: (d) => (m3(d).multiview_input.file_constraints.max_side = -1), path: () => `${M3()}.multiview_input.file_constraints.max_side` },
  { name: 'file_constraints mime types duplicate', mutate: (d) => (m3(d).multiview_input.file_constraints.allowed_mime_types = ['image/png', 'image/png']), path: () => `${M3()}.multiview_input.file_constraints.allowed_mime_types[1]` },
  { name: 'cross_provider_edit extra key', mutate: (d) => (m3(d).cross_provider_edit.export = true), path: () => `${M3()}.cross_provider_edit.export` },
  { name: 'model3d boolean', mutate: (d) => (m3(d).support_quad = 'true'), path: () => `${M3()}.support_quad`, message: /must be a boolean/ },
  { name: 'model3d stringList duplicate', mutate: (d) => (m3(d).output_formats = ['glb', 'glb']), path: () => `${M3()}.output_formats[1]` },
  { name: 'model3d NNI', mutate: (d) => (m3(d).max_face_limit = -1), path: () => `${M3()}.max_face_limit` },
  { name: 'model3d string', mutate: (d) => (m3(d).default_output_format = ['glb']), path: () => `${M3()}.default_output_format` },
  { name: 'model3d extra key (multiview_to_model)', mutate: (d) => (cap(d, 'model3d', 'multiview_to_model').face_limit = 1000), path: () => `${capPath('model3d', 'multiview_to_model')}.face_limit` },
  // mesh_edit
  { name: 'supported_operations empty', mutate: (d) => (cap(d, 'mesh-edit', 'mesh_edit').supported_operations = {}), path: () => `${ME()}.supported_operations`, message: /at least 1 key/ },
  { name: 'operation without supported', mutate: (d) => delete cap(d, 'mesh-edit', 'mesh_edit').supported_operations.convert.supported, path: () => `${ME()}.supported_operations.convert.supported`, message: /required/ },
  { name: 'operation extra key', mutate: (d) => (cap(d, 'mesh-edit', 'mesh_edit').supported_operations.convert.max_face_limit = 5), path: () => `${ME()}.supported_operations.convert.max_face_limit` },
  { name: 'operation supported_formats duplicate', mutate: (d) => (cap(d, 'mesh-edit', 'mesh_edit').supported_operations.convert.supported_formats = ['FBX', 'FBX']), path: () => `${ME()}.supported_operations.convert.supported_formats[1]` },
  { name: 'operation texture prompt modes empty string', mutate: (d) => (cap(d, 'mesh-edit', 'mesh_edit').supported_operations.texture.supported_texture_prompt_modes = ['']), path: () => `${ME()}.supported_operations.texture.supported_texture_prompt_modes[0]` },
  { name: 'mesh_edit extra key', mutate: (d) => (cap(d, 'mesh-edit', 'mesh_edit').operations = {}), path: () => `${ME()}.operations` },
  // audio_generate
  { name: 'audio boolean', mutate: (d) => (cap(d, 'audio', 'audio_generate').supports_lyrics = null), path: () => `${capPath('audio', 'audio_generate')}.supports_lyrics` },
  { name: 'audio output_formats empty string', mutate: (d) => (cap(d, 'audio', 'audio_generate').output_formats = ['']), path: () => `${capPath('audio', 'audio_generate')}.output_formats[0]` },
  { name: 'audio extra key', mutate: (d) => (cap(d, 'audio', 'audio_generate').max_duration = 240), path: () => `${capPath('audio', 'audio_generate')}.max_duration` },
  // speech_to_text
  { name: 'stt NNI', mutate: (d) => (cap(d, 'speech-to-text', 'speech_to_text').poll_interval_ms = -1), path: () => `${capPath('speech-to-text', 'speech_to_text')}.poll_interval_ms` },
  { name: 'stt number at least 0', mutate: (d) => (cap(d, 'speech-to-text', 'speech_to_text').max_duration_seconds = -1), path: () => `${capPath('speech-to-text', 'speech_to_text')}.max_duration_seconds` },
  { name: 'stt string', mutate: (d) => (cap(d, 'speech-to-text', 'speech_to_text').submit_url = 1), path: () => `${capPath('speech-to-text', 'speech_to_text')}.submit_url` },
  { name: 'stt boolean', mutate: (d) => (cap(d, 'speech-to-text', 'speech_to_text').supports_timestamp = 'yes'), path: () => `${capPath('speech-to-text', 'speech_to_text')}.supports_timestamp` },
  // text_to_speech
  { name: 'tts_params true', mutate: (d) => (tts(d).tts_params = true), path: () => `${TTS()}.tts_params`, message: /must be false or an object/ },
  { name: 'tts_params a string', mutate: (d) => (tts(d).tts_params = 'default'), path: () => `${TTS()}.tts_params`, message: /must be false or an object/ },
  { name: 'tts_params extra key', mutate: (d) => (tts(d).tts_params.speed_range = [0.5, 2]), path: () => `${TTS()}.tts_params.speed_range` },
  { name: 'tts_params boolean', mutate: (d) => (tts(d).tts_params.emotion = 'happy'), path: () => `${TTS()}.tts_params.emotion` },
  { name: 'tts_params sample_rates duplicate', mutate: (d) => (tts(d).tts_params.sample_rates = [16000, 16000]), path: () => `${TTS()}.tts_params.sample_rates[1]` },
  { name: 'tts_params bit_rates not integers', mutate: (d) => (tts(d).tts_params.bit_rates = [64000.5]), path: () => `${TTS()}.tts_params.bit_rates[0]`, message: /integer/ },
  { name: 'tts_params opus_sample_rates not an array', mutate: (d) => (tts(d).tts_params.opus_sample_rates = 48000), path: () => `${TTS()}.tts_params.opus_sample_rates` },
  { name: 'volume_range step 0', mutate: (d) => (tts(d).tts_params.volume_range.step = 0), path: () => `${TTS()}.tts_params.volume_range.step`, message: /must be > 0/ },
  { name: 'volume_range without min', mutate: (d) => delete tts(d).tts_params.volume_range.min, path: () => `${TTS()}.tts_params.volume_range.min`, message: /required/ },
  { name: 'volume_range max negative', mutate: (d) => (tts(d).tts_params.volume_range.max = -1), path: () => `${TTS()}.tts_params.volume_range.max` },
  { name: 'volume_range extra key', mutate: (d) => (tts(d).tts_params.volume_range.default = 1), path: () => `${TTS()}.tts_params.volume_range.default` },
  { name: 'voice without id', mutate: (d) => delete tts(d).voices[0].id, path: () => `${TTS()}.voices[0].id`, message: /required/ },
  { name: 'voice name empty', mutate: (d) => (tts(d).voices[1].name = ''), path: () => `${TTS()}.voices[1].name`, message: /must not be empty/ },
  { name: 'voice provider empty', mutate: (d) => (tts(d).voices[0].provider = ''), path: () => `${TTS()}.voices[0].provider` },
  { name: 'voice string field', mutate: (d) => (tts(d).voices[0].age = 30), path: () => `${TTS()}.voices[0].age` },
  { name: 'voice tags duplicate', mutate: (d) => (tts(d).voices[0].tags = ['calm', 'calm']), path: () => `${TTS()}.voices[0].tags[1]` },
  { name: 'voice extra key', mutate: (d) => (tts(d).voices[0].style = 'news'), path: () => `${TTS()}.voices[0].style` },
  { name: 'tts string field', mutate: (d) => (tts(d).default_voice_id = 7), path: () => `${TTS()}.default_voice_id` },
  // voice_clone
  { name: 'voice clone audio without formats', mutate: (d) => delete cap(d, 'voice-clone', 'voice_clone').prompt_audio.formats, path: () => `${capPath('voice-clone', 'voice_clone')}.prompt_audio.formats`, message: /required/ },
  { name: 'voice clone audio without max_duration_seconds', mutate: (d) => delete cap(d, 'voice-clone', 'voice_clone').source_audio.max_duration_seconds, path: () => `${capPath('voice-clone', 'voice_clone')}.source_audio.max_duration_seconds` },
  { name: 'voice clone max_size_mb negative', mutate: (d) => (cap(d, 'voice-clone', 'voice_clone').source_audio.max_size_mb = -1), path: () => `${capPath('voice-clone', 'voice_clone')}.source_audio.max_size_mb` },
  { name: 'voice clone min_duration_seconds not a number', mutate: (d) => (cap(d, 'voice-clone', 'voice_clone').source_audio.min_duration_seconds = '10'), path: () => `${capPath('voice-clone', 'voice_clone')}.source_audio.min_duration_seconds` },
  { name: 'voice clone audio extra key', mutate: (d) => (cap(d, 'voice-clone', 'voice_clone').prompt_audio.channels = 1), path: () => `${capPath('voice-clone', 'voice_clone')}.prompt_audio.channels` },
  { name: 'voice clone preview_models duplicate', mutate: (d) => (cap(d, 'voice-clone', 'voice_clone').preview_models = ['a', 'a']), path: () => `${capPath('voice-clone', 'voice_clone')}.preview_models[1]` },
  // image_vectorize
  { name: 'vectorize max_colors_options duplicate', mutate: (d) => (cap(d, 'vectorize', 'image_vectorize').max_colors_options = [8, 8]), path: () => `${capPath('vectorize', 'image_vectorize')}.max_colors_options[1]` },
  { name: 'vectorize max_colors_options not integers', mutate: (d) => (cap(d, 'vectorize', 'image_vectorize').max_colors_options = [8.5]), path: () => `${capPath('vectorize', 'image_vectorize')}.max_colors_options[0]` },
  { name: 'vectorize stringList empty string', mutate: (d) => (cap(d, 'vectorize', 'image_vectorize').cleanup_levels = ['']), path: () => `${capPath('vectorize', 'image_vectorize')}.cleanup_levels[0]` },
  { name: 'vectorize boolean', mutate: (d) => (cap(d, 'vectorize', 'image_vectorize').async_task = 0), path: () => `${capPath('vectorize', 'image_vectorize')}.async_task` },
  // video_enhance
  { name: 'enhance max_file_size_mb negative', mutate: (d) => (cap(d, 'enhance', 'video_enhance').max_file_size_mb = -1), path: () => `${capPath('enhance', 'video_enhance')}.max_file_size_mb` },
  { name: 'enhance operations duplicate', mutate: (d) => (cap(d, 'enhance', 'video_enhance').operations = ['upscale', 'upscale']), path: () => `${capPath('enhance', 'video_enhance')}.operations[1]` },
  { name: 'enhance boolean', mutate: (d) => (cap(d, 'enhance', 'video_enhance').preserve_audio = 'yes'), path: () => `${capPath('enhance', 'video_enhance')}.preserve_audio` },
  // the built-in catalog, as an operator would edit it
  { base: 'builtin', name: 'built-in: extra key in a 3D capability', mutate: (d) => (cap(d, 'tripo-v3.1', 'text_to_model').bogus = 1), path: () => `$.baseModels[${modelIndex(builtin, 'tripo-v3.1')}].capabilities.text_to_model.bogus`, message: /^unknown key$/ },
  { base: 'builtin', name: 'built-in: face_limit_range.min negative', mutate: (d) => (cap(d, 'tripo-p1', 'text_to_model').face_limit_range.min = -48), path: () => `$.baseModels[${modelIndex(builtin, 'tripo-p1')}].capabilities.text_to_model.face_limit_range.min` },
  { base: 'builtin', name: 'built-in: draft contract 1 validity changed', mutate: (d) => (cap(d, 'seedance-1.5-pro', 'video_generate').draft_mode.validity_seconds = 86400), path: () => `$.baseModels[${modelIndex(builtin, 'seedance-1.5-pro')}].capabilities.video_generate.draft_mode.validity_seconds` },
];

describe('catalog schema: one error line per broken rule', () => {
  for (const c of NEGATIVE_CASES) {
    it(c.name, () => {
      let doc: Json = structuredClone(c.base === 'builtin' ? builtin : everyField);
      if ('replaceWith' in c) doc = c.replaceWith;
      else c.mutate(doc);
      const lines = validateCatalog(doc);
      const expectedPath = typeof c.path === 'function' ? c.path() : c.path;
      assert.equal(lines.length, 1, `expected exactly one line, got:\n${lines.join('\n')}`);
      assert.ok(lines[0].startsWith(`${expectedPath}: `), `line "${lines[0]}" should start with "${expectedPath}: "`);
      if (c.message) assert.match(lines[0].slice(expectedPath.length + 2), c.message);
    });
  }

  it('reports several problems at once, one line each, in a stable form', () => {
    const doc = structuredClone(everyField);
    lang(doc).bogus = 1;
    m3(doc).face_limit_range.min = -1;
    doc.providers[0].code = '';
    assert.deepEqual(validateCatalog(doc).sort(), [
      '$.baseModels[0].capabilities.text_generate.bogus: unknown key',
      `${M3()}.face_limit_range.min: must be >= 0`,
      '$.providers[0].code: must not be empty',
    ].sort());
  });
});

describe('built-in catalog content', () => {
  const catalog = loadCatalog({ config: {} });
  const byAlias = (alias: string) => {
    const model = catalog.find(alias);
    assert.ok(model, `built-in catalog lacks ${alias}`);
    return model;
  };

  it('lists a provider for every providerCode, and never `local`', () => {
    const codes = new Set(catalog.providers.map((p) => p.code));
    assert.equal(codes.has('local'), false);
    for (const model of catalog.models) assert.ok(codes.has(model.providerCode), `${model.alias}: ${model.providerCode}`);
  });

  it('declares every capability it lists in modelTypes, and nothing else', () => {
    for (const model of catalog.models) assert.deepEqual(Object.keys(model.capabilities).sort(), [...model.modelTypes].sort(), model.alias);
  });

  it('serves every capability type of the API listing except video_edit (not a catalog capability)', () => {
    for (const type of ['text_generate', 'image_generate', 'image_edit', 'image_analysis', 'video_generate', 'image_to_video',
      'omni_video', 'tools_call', 'audio_generate', 'text_to_model', 'image_to_model', 'multiview_to_model',
      'digital_human_generate', 'text_to_speech', 'speech_to_text', 'video_understanding', 'audio_understanding', 'mesh_edit']) {
      assert.ok(catalog.list(type).length > 0, type);
    }
  });

  it('maps the 3D families to the providerCode and upstream version', () => {
    const expected: [string, string, string][] = [
      ['hunyuan3d-pro-3.0', 'hunyuan', 'hunyuan3d-pro-3.0'],
      ['hunyuan3d-pro-3.1', 'hunyuan', 'hunyuan3d-pro-3.1'],
      ['hunyuan3d-rapid-2.5', 'hunyuan', 'hunyuan3d-rapid-2.5'],
      ['rodin-gen2-low', 'rodin', 'Gen-2/low'],
      ['rodin-gen2.5-high', 'rodin', 'Gen-2.5/high'],
      ['rodin-gen2.5-extra-high', 'rodin', 'Gen-2.5/extra-high'],
      ['tripo-v3.0', 'tripo', 'v3.0-20250812'],
      ['tripo-v3.1', 'tripo', 'v3.1-20260211'],
      ['tripo-p1', 'tripo', 'P1-20260311'],
      ['tripo-turbo-v1.0-text', 'tripo', 'Turbo-v1.0-20250506'],
      ['tripo-v2.5-image', 'tripo', 'v2.5-20250123'],
      ['fal-tripo-v3.1', 'fal', 'tripo3d/v3.1'],
      ['fal-tripo-p1', 'fal', 'tripo3d/p1'],
      ['tripo-segment-v1.0', 'tripo', 'v1.0-20250506'],
      ['tripo-smart-lowpoly-v2.0', 'tripo', 'P-v2.0-20251225'],
      ['tripo-texture-v2.5', 'tripo', 'v2.5-20250123'],
      ['tripo-rig-v2.5', 'tripo', 'v2.5-20260210'],
    ];
    for (const [alias, provider, version] of expected) {
      const model = byAlias(alias);
      assert.equal(model.providerCode, provider, alias);
      assert.equal(model.defaultRealModelName, version, alias);
    }
  });

  it('gives each legacy tripo alias exactly one generation type', () => {
    const legacy = catalog.models.filter((m) => m.providerCode === 'tripo'
      && ['Turbo-v1.0-20250506', 'v2.5-20250123'].includes(m.defaultRealModelName)
      && m.modelTypes.some((t) => t !== 'mesh_edit'));
    assert.equal(legacy.length, 5);
    for (const model of legacy) assert.equal(model.modelTypes.filter((t) => t !== 'mesh_edit').length, 1, model.alias);
  });

  it('carries the multiview views and counts of each 3D family', () => {
    const mv = (alias: string) => byAlias(alias).capabilities.multiview_to_model?.multiview_input;
    assert.deepEqual([mv('hunyuan3d-pro-3.0')?.min_images, mv('hunyuan3d-pro-3.0')?.max_images], [2, 4]);
    assert.deepEqual([mv('hunyuan3d-pro-3.1')?.min_images, mv('hunyuan3d-pro-3.1')?.max_images, mv('hunyuan3d-pro-3.1')?.views.length], [2, 8, 8]);
    assert.deepEqual([mv('rodin-gen2.5-medium')?.min_images, mv('rodin-gen2.5-medium')?.max_images], [2, 5]);
    assert.deepEqual(mv('tripo-v3.1')?.views.map((v) => v.type), ['front', 'left', 'back', 'right']);
    assert.deepEqual([mv('fal-tripo-p1')?.min_images, mv('fal-tripo-p1')?.max_images], [4, 4]);
    for (const model of catalog.list('multiview_to_model')) {
      const front = model.capabilities.multiview_to_model?.multiview_input?.views.find((v) => v.type === 'front');
      assert.equal(front?.required, true, model.alias);
    }
  });

  it('carries the face-limit ranges of each 3D family', () => {
    const t2m = (alias: string) => byAlias(alias).capabilities.text_to_model;
    assert.deepEqual(t2m('hunyuan3d-pro-3.1')?.face_limit_range, { min: 3000, max: 1500000 });
    assert.deepEqual(t2m('tripo-p1')?.face_limit_range, { min: 48, max: 20000 });
    assert.deepEqual(t2m('tripo-v3.0')?.face_limit_range_by_topology, { triangle: { min: 1000, max: 1000000 }, quad: { min: 1000, max: 500000 } });
    assert.deepEqual(t2m('tripo-v3.1')?.face_limit_by_geometry_quality?.detailed, { triangle: 2000000, quad: 1000000 });
    assert.deepEqual(t2m('rodin-gen2.5-low')?.face_limit_range_by_topology?.triangle, { min: 500, max: 1000000 });
    assert.deepEqual(t2m('rodin-gen2.5-extra-high')?.face_limit_range_by_topology?.triangle, { min: 20000, max: 2000000 });
    for (const alias of ['hunyuan3d-rapid-2.5', 'fal-tripo-v3.1', 'fal-tripo-p1']) {
      const value = t2m(alias);
      assert.equal(value?.face_limit_range ?? value?.face_limit_range_by_topology ?? value?.face_limit_by_geometry_quality, undefined, alias);
    }
  });

  it('declares the 3D edit operations on the right aliases', () => {
    const ops = (alias: string) => Object.entries(byAlias(alias).capabilities.mesh_edit?.supported_operations ?? {})
      .filter(([, op]) => op.supported).map(([name]) => name).sort();
    assert.deepEqual(ops('tripo-segment-v1.0'), ['completion', 'segmentation']);
    assert.deepEqual(ops('tripo-smart-lowpoly-v2.0'), ['smart_lowpoly']);
    assert.deepEqual(ops('tripo-texture-v2.5'), ['texture']);
    assert.deepEqual(ops('tripo-rig-v2.5'), ['check_riggable', 'retarget_animation', 'rig']);
    assert.deepEqual(ops('tripo-v3.1'), ['convert', 'stylize']);
    assert.deepEqual(ops('tripo-turbo-v1.0-text'), ['refine']);
    for (const alias of ['tripo-segment-v1.0', 'tripo-smart-lowpoly-v2.0', 'tripo-texture-v2.5', 'tripo-rig-v2.5']) {
      assert.deepEqual(byAlias(alias).modelTypes, ['mesh_edit'], alias);
    }
  });

  it('gives the speech models real MiniMax system voices', () => {
    const voices = byAlias('minimax-speech-02-hd').capabilities.text_to_speech?.voices?.map((v) => v.id) ?? [];
    for (const id of ['male-qn-qingse', 'female-shaonv', 'English_Graceful_Lady']) assert.ok(voices.includes(id), id);
  });
});

describe('loadCatalog and overrides', () => {
  const load = (config: GengateConfig, path?: string) => loadCatalog({ path, config });
  const lineStartingWith = (err: unknown, prefix: string) => {
    assert.ok(err instanceof CatalogError, 'expected a CatalogError');
    return err.lines.some((l) => l.startsWith(prefix));
  };

  it('loads the built-in catalog with every model enabled when nothing is configured', () => {
    const catalog = load({});
    assert.equal(catalog.models.length, builtin.baseModels.length);
    assert.ok(catalog.models.every((m) => m.enabled && m.disabled_reason === undefined));
  });

  it('merges capability values over the catalog per key and field; live values win', () => {
    const catalog = load({ models: { 'gpt-4.1': { capabilities: { text_generate: { max_output_tokens: 1000 } } } } });
    const model = catalog.find('gpt-4.1');
    assert.equal(model?.capabilities.text_generate?.max_output_tokens, 1000);
    assert.equal(model?.capabilities.text_generate?.max_context_tokens, 1047576, 'other fields are kept');
    assert.equal(model?.capabilities.tools_call?.max_output_tokens, 32768, 'other capability keys are untouched');
    assert.equal(toPlatformItem(model!).capabilities.text_generate?.max_output_tokens, 1000);
  });

  it('replaces a whole nested value and removes a field set to null', () => {
    const catalog = load({
      models: {
        'tripo-p1': { capabilities: { text_to_model: { face_limit_range: { min: 50, max: 10000 }, support_export_uv: null } } },
      },
    });
    const value = catalog.find('tripo-p1')?.capabilities.text_to_model;
    assert.deepEqual(value?.face_limit_range, { min: 50, max: 10000 });
    assert.equal('support_export_uv' in (value ?? {}), false);
  });

  it('disables a model with its reason and end time', () => {
    const catalog = load({ models: { 'kling-v2.6': { enabled: false, disabled_reason: 'maintenance', disabled_until: '2026-01-01T00:00:00Z' } } });
    const model = catalog.find('kling-v2.6')!;
    assert.deepEqual([model.enabled, model.disabled_reason, model.disabled_until], [false, 'maintenance', '2026-01-01T00:00:00Z']);
    const item = toPlatformItem(model);
    assert.deepEqual([item.enabled, item.disabled_reason, item.disabled_until], [false, 'maintenance', '2026-01-01T00:00:00Z']);
    assert.equal(catalog.find('kling-v2.5-turbo')?.enabled, true);
  });

  it('disables models of providers missing from a providers config, except local ones', () => {
    const catalog = load({ providers: { openai: { base_url: 'https://api.openai.com/v1' } } });
    assert.equal(catalog.find('gpt-4.1')?.enabled, true);
    const deepseek = catalog.find('deepseek-chat')!;
    assert.deepEqual([deepseek.enabled, deepseek.disabled_reason], [false, 'provider not configured']);

    const doc = structuredClone(everyField);
    doc.baseModels[0].providerCode = 'local';
    const file = tempFile('local.json', JSON.stringify(doc));
    const local = load({ providers: {} }, file);
    assert.equal(local.find('language')?.enabled, true);
    assert.equal(local.find('image')?.disabled_reason, 'provider not configured');
  });

  it('lists offline models as disabled', () => {
    const catalog = load({}, EVERY_FIELD_PATH);
    const model = catalog.find('digital-human')!;
    assert.equal(model.enabled, false);
    assert.equal(typeof model.disabled_reason, 'string');
    assert.equal(load({ models: { 'digital-human': { enabled: true } } }, EVERY_FIELD_PATH).find('digital-human')?.enabled, false);
  });

  it('rejects an override naming an unknown alias', () => {
    assert.throws(
      () => load({ models: { 'gpt-9': { enabled: false } } }),
      (err) => {
        assert.ok(err instanceof CatalogError);
        assert.deepEqual(err.lines, ['GENGATE_CONFIG.models["gpt-9"]: no catalog model has this alias']);
        return true;
      },
    );
  });

  it('rejects an override that makes the catalog invalid, naming the override', () => {
    const index = modelIndex(builtin, 'gpt-4.1');
    assert.throws(
      () => load({ models: { 'gpt-4.1': { capabilities: { text_generate: { max_output_tokens: -5, bogus: true } } } } }),
      (err) => {
        assert.ok(err instanceof CatalogError);
        assert.deepEqual(err.lines.sort(), [
          `$.baseModels[${index}].capabilities.text_generate.bogus: unknown key (after the override in GENGATE_CONFIG.models["gpt-4.1"])`,
          `$.baseModels[${index}].capabilities.text_generate.max_output_tokens: must be >= 0 (after the override in GENGATE_CONFIG.models["gpt-4.1"])`,
        ]);
        return true;
      },
    );
  });

  it('rejects an override adding a capability that is not a capability name', () => {
    assert.throws(
      () => load({ models: { 'gpt-4.1': { capabilities: { video_edit: { max_images: 1 } } } } }),
      (err) => lineStartingWith(err, `$.baseModels[${modelIndex(builtin, 'gpt-4.1')}].capabilities.video_edit: unknown key`),
    );
  });

  it('throws the validation lines for an invalid file, and a `$:` line for bad JSON or a missing file', () => {
    const doc = structuredClone(everyField);
    doc.schemaVersion = 2;
    assert.throws(() => load({}, tempFile('bad.json', JSON.stringify(doc))), (err) => lineStartingWith(err, '$.schemaVersion: '));
    assert.throws(() => load({}, tempFile('broken.json', '{"schemaVersion": 1,')), (err) => lineStartingWith(err, '$: not valid JSON'));
    assert.throws(() => readCatalogFile('/nonexistent/catalog.json'), (err) => lineStartingWith(err, '$: cannot read the file'));
  });

  it('finds by alias and lists by capability type', () => {
    const catalog = new Catalog(everyField as CatalogDocument);
    assert.equal(catalog.find('video')?.alias, 'video');
    assert.equal(catalog.find('nope'), undefined);
    assert.equal(catalog.list().length, everyField.baseModels.length);
    assert.equal(catalog.list('all').length, everyField.baseModels.length);
    assert.deepEqual(catalog.list('image_to_video').map((m) => m.alias), ['video']);
    assert.deepEqual(catalog.list('audio_understanding').map((m) => m.alias), ['language']);
    assert.deepEqual(catalog.list('video_edit'), []);
  });
});

describe('model list items', () => {
  const catalog = new Catalog(everyField as CatalogDocument);

  it('maps a live model to the platform item of GET /v1/models/list', () => {
    const model = catalog.find('embedding')!;
    assert.deepEqual(toPlatformItem(model), {
      name: 'embedding',
      alias: 'embedding',
      description: 'Declares every field of the embedding capability schema.',
      types: ['text_embedding'],
      icon_path: '/icons/embedding.svg',
      capabilities: { text_embedding: { type: 'text_embedding', dimensions: [256, 1024] } },
      provider: 'acme',
      enabled: true,
    });
  });

  it('omits unset optional fields and carries the disabled state', () => {
    const doc = structuredClone(everyField);
    delete doc.baseModels[1].description;
    delete doc.baseModels[1].iconPath;
    const item = toPlatformItem(new Catalog(doc, { models: { embedding: { enabled: false, disabled_reason: 'quota' } } }).find('embedding')!);
    assert.deepEqual(Object.keys(item).sort(), ['alias', 'capabilities', 'disabled_reason', 'enabled', 'name', 'provider', 'types']);
    assert.equal(item.disabled_reason, 'quota');
  });

  it('returns capabilities a caller cannot use to change the catalog', () => {
    const model = catalog.find('embedding')!;
    const item = toPlatformItem(model);
    item.capabilities.text_embedding!.dimensions!.push(4096);
    assert.deepEqual(model.capabilities.text_embedding?.dimensions, [256, 1024]);
  });

  it('maps a live model to the compatibility item of GET /v1/models', () => {
    const item = toCompatItem(catalog.find('image')!, 1750000000);
    const permissionId = item.permission[0].id;
    assert.match(permissionId, /^modelperm-[0-9a-f]{24}$/);
    assert.deepEqual(item, {
      id: 'image',
      object: 'model',
      created: 1750000000,
      owned_by: 'acme',
      permission: [{
        id: permissionId,
        object: 'model_permission',
        created: 1750000000,
        allow_create_engine: false,
        allow_sampling: true,
        allow_logprobs: true,
        allow_search_indices: false,
        allow_view: true,
        allow_fine_tuning: false,
        organization: '*',
        group: null,
        is_blocking: false,
      }],
      root: 'image',
      parent: null,
    });
    assert.equal(toCompatItem(catalog.find('image')!, 1).permission[0].id, permissionId, 'stable across calls');
    assert.notEqual(toCompatItem(catalog.find('video')!, 1750000000).permission[0].id, permissionId, 'distinct per model');
  });
});

describe('catalog validate command', () => {
  it('prints a summary and returns 0 for a valid file', () => {
    const lines: string[] = [];
    assert.equal(runCatalogValidate(EVERY_FIELD_PATH, (l) => lines.push(l)), 0);
    assert.deepEqual(lines, [`${EVERY_FIELD_PATH}: valid (1 providers, 14 models)`]);
  });

  it('prints one line per error and returns 1', () => {
    const doc = structuredClone(everyField);
    doc.bogus = true;
    img(doc).extra = 1;
    const lines: string[] = [];
    assert.equal(runCatalogValidate(tempFile('two.json', JSON.stringify(doc)), (l) => lines.push(l)), 1);
    assert.deepEqual(lines.sort(), ['$.bogus: unknown key', `${IMG()}.extra: unknown key`].sort());
  });

  it('prints a `$:` line and returns 1 for bad JSON', () => {
    const lines: string[] = [];
    assert.equal(runCatalogValidate(tempFile('broken.json', '{ "providers": [ }'), (l) => lines.push(l)), 1);
    assert.equal(lines.length, 1);
    assert.match(lines[0], /^\$: not valid JSON/);
  });
});

describe('gengate catalog validate (the CLI)', () => {
  const cli = (file: string) =>
    spawnSync(process.execPath, [...CLI_ARGS, 'catalog', 'validate', file], { cwd: ROOT, encoding: 'utf8' });

  it('exits 0 for the built-in catalog', () => {
    const run = cli(BUILTIN_CATALOG_PATH);
    assert.equal(run.status, 0, run.stderr);
    assert.equal(run.stdout, `${BUILTIN_CATALOG_PATH}: valid (${builtin.providers.length} providers, ${builtin.baseModels.length} models)\n`);
  });

  it('exits 1 and names the JSON path of an extra key inside a capability', () => {
    const doc = structuredClone(builtin);
    const index = modelIndex(doc, 'seedream-4.0');
    doc.baseModels[index].capabilities.image_generate.bogus = 1;
    const run = cli(tempFile('extra-key.json', JSON.stringify(doc)));
    assert.equal(run.status, 1);
    assert.equal(run.stdout, `$.baseModels[${index}].capabilities.image_generate.bogus: unknown key\n`);
  });

  it('exits 1 for bad JSON', () => {
    const run = cli(tempFile('broken.json', '{"schemaVersion": 1, "providers": ['));
    assert.equal(run.status, 1);
    assert.match(run.stdout, /^\$: not valid JSON/);
  });
});
