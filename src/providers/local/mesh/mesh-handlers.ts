/**
 * The local engine's /v1/mesh3d work: each endpoint's request fields (API names,
 * defaults applied by the endpoint) turned into options of the mesh operations, and their
 * results into files and the facts the 3D history keeps.
 */
import type { Document, Texture } from '@gltf-transform/core';
import { cloneDocument, meshopt } from '@gltf-transform/functions';
import { MeshoptEncoder } from 'meshoptimizer';
import sharp from 'sharp';
import type { EditOperation, ResolvedView, RigSpec } from '../../../endpoints/mesh3d.ts';
import { TaskFailedError, TaskRejectedError, type Endpoint, type GeneratedFile, type GenerationOutput, type JobContext, type JobOf, type RunContext, type TaskInputs } from '../../spec.ts';
import type { LocalHandler } from '../local-handler.ts';
import { ANIMATION_PRESETS, presetOf } from './animation-presets.ts';
import { completeParts } from './complete-parts.ts';
import { checkConvertOptions, convertModel, type ConvertFormat } from './convert-model.ts';
import { encodeTexture, type EncodedTexture } from './encode-texture.ts';
import { generateModel, type ReliefView } from './generate-model.ts';
import { importModel } from './import-model.ts';
import { inspectBody } from './inspect-body.ts';
import { bakeNodeTransforms, createDocument, describeModel, digestOf, faceCount, meshNodes, meshoptReady, writeGlb, type Vec3 } from './mesh-common.ts';
import { paintModel } from './paint-model.ts';
import { readSubject } from './read-subject.ts';
import { refineModel } from './refine-model.ts';
import { renderPreview } from './render-preview.ts';
import { retargetAnimation } from './retarget-animation.ts';
import { rigModel } from './rig-model.ts';
import { segmentModel } from './segment-model.ts';
import { RIG_TYPES, SKELETONS, jointName, type RigType } from './skeleton-templates.ts';
import { smartLowpoly } from './smart-lowpoly.ts';
import { stylizeModel, type Style } from './stylize-model.ts';
import { writeFbx } from './write-fbx.ts';
import { writeSchematic } from './write-schematic.ts';

const GLB_MIME = 'model/gltf-binary';
const FBX_MIME = 'application/octet-stream';
/** Faces when a generation names no face_limit: the model adapts, the local one picks these. */
const ADAPTIVE_FACES = { standard: 20000, detailed: 60000 };
const TEXTURE_SIDE = { standard: 1024, detailed: 2048 };
/** How much finer a smart low-poly generation starts before it is simplified. */
const LOW_POLY_DETAIL = 4;

/** Directions of the semantic views: the subject faces +Z, its own left is +X. */
const VIEW_DIRECTIONS: Record<string, Vec3> = {
  front: [0, 0, 1],
  back: [0, 0, -1],
  left: [1, 0, 0],
  right: [-1, 0, 0],
  left_front: [Math.SQRT1_2, 0, Math.SQRT1_2],
  right_front: [-Math.SQRT1_2, 0, Math.SQRT1_2],
  top: [0, 1, 0],
  bottom: [0, -1, 0],
};
type GenerateEndpoint = Extract<Endpoint, `mesh3d.generate.${string}`>;
type EditEndpoint<Op extends EditOperation = EditOperation> = `mesh3d.edit.${Op}`;
type EditInput<Op extends EditOperation> = TaskInputs[EditEndpoint<Op>];

/**
 * A face limit as the local engine counts faces: undefined for automatic (absent or `auto`).
 * The endpoint lets other words through for the models that know them (levels such as
 * `high`); the local engine knows none.
 */
function faceLimitOf(value: number | string | undefined): number | undefined {
  if (value === undefined || value === 'auto') return undefined;
  if (typeof value === 'string' || value < 1) throw new TaskRejectedError('face_limit must be a positive integer or auto on the local engine');
  return value;
}

interface ReadPicture {
  direction: Vec3;
  image: Buffer;
}

/** Reads and decodes the request's pictures: each must be an image sharp can open. */
async function readPictures(refs: { ref: string; direction: Vec3 }[], ctx: RunContext, autofix: boolean): Promise<ReadPicture[]> {
  const pictures: ReadPicture[] = [];
  for (const { ref, direction } of refs) {
    const { data } = await ctx.readInput(ref);
    try {
      const image = await sharp(data).rotate().flatten({ background: '#ffffff' }).resize(1024, 1024, { fit: 'inside', withoutEnlargement: true });
      pictures.push({ direction, image: await (autofix ? image.normalise() : image).png().toBuffer() });
    } catch (err) {
      throw new TaskFailedError(`an input image could not be decoded: ${(err as Error).message}`);
    }
  }
  return pictures;
}

/** Views (their images resolved to URLs) and the direction each looks from. */
function viewRefs(views: ResolvedView[]): { ref: string; direction: Vec3 }[] {
  return views.map((view, i) => {
    const direction = VIEW_DIRECTIONS[view.view_type];
    if (!direction) throw new TaskRejectedError(`view_images[${i}].view_type "${view.view_type}" is not a view the local engine knows`);
    return { ref: view.file.url, direction };
  });
}

/** The pictures of a generation request: `file` of an image generation, `view_images` of a multiview one (legacy `files` already folded in). */
function pictureRefs(job: JobOf<GenerateEndpoint>): { ref: string; direction: Vec3 }[] {
  if (job.endpoint === 'mesh3d.generate.image') return [{ ref: job.input.file.url, direction: VIEW_DIRECTIONS.front! }];
  if (job.endpoint === 'mesh3d.generate.multiview') return viewRefs(job.input.view_images);
  return [];
}

async function reliefOf(pictures: ReadPicture[]): Promise<ReliefView[]> {
  const size = 64;
  return Promise.all(
    pictures.map(async ({ direction, image }) => {
      const grey = await sharp(image).greyscale().resize(size, size, { fit: 'fill' }).raw().toBuffer();
      return { direction, size, heights: Float32Array.from(grey, (v) => v / 255) };
    }),
  );
}

async function meanColor(image: Buffer): Promise<Vec3> {
  const { channels } = await sharp(image).stats();
  return [channels[0]!.mean / 255, channels[1]!.mean / 255, channels[2]!.mean / 255];
}

function glbFile(data: Buffer, role: string, fileName: string): GeneratedFile {
  return { type: '3d', role, data, fileName, mimeType: GLB_MIME };
}

/** Text, image and multiview generation: geometry from the seed, then colours and the requested files. */
async function generate(job: JobOf<GenerateEndpoint>, ctx: RunContext): Promise<GenerationOutput> {
  await meshoptReady();
  const input = job.input;
  const topology = input.topology ?? 'triangle';
  // Part generation excludes texture, PBR and quads.
  const separateParts = input.generate_parts === true;
  const texture = !separateParts && (input.enable_texture ?? true);
  const pbr = texture && (input.enable_pbr ?? false);
  const quality = input.geometry_quality ?? 'standard';
  const faceLimit = faceLimitOf(input.face_limit) ?? (topology === 'quad' ? ADAPTIVE_FACES[quality] / 2 : ADAPTIVE_FACES[quality]);
  const textureSide = TEXTURE_SIDE[input.texture_quality ?? 'standard'];

  const refs = pictureRefs(job);
  const pictures = await readPictures(refs, ctx, job.endpoint === 'mesh3d.generate.image' && job.input.enable_image_autofix === true);
  const { prompt, negative_prompt: negativePrompt } = job.endpoint === 'mesh3d.generate.text' ? job.input : { prompt: '', negative_prompt: undefined };
  const seed = digestOf(job.endpoint, prompt, negativePrompt, input.seed, ...pictures.map((p) => digestOf(p.direction, p.image)));
  const subject = readSubject(prompt, seed);
  if (pictures.length > 0) subject.palette.unshift(await meanColor(pictures[0]!.image));
  ctx.signal.throwIfAborted();

  const doc = createDocument();
  // Smart low-poly: a finer surface first, then meshoptimizer brings it down to the limit.
  const lowPoly = input.smart_low_poly === true;
  const layout = generateModel(doc, {
    seed,
    subject: subject.kind,
    words: subject.words,
    faceLimit: lowPoly ? faceLimit * LOW_POLY_DETAIL : faceLimit,
    topology: separateParts ? 'triangle' : topology,
    separateParts,
    detailed: quality === 'detailed',
    relief: await reliefOf(pictures),
  });
  if (lowPoly) smartLowpoly(doc, { faceLimit, quad: topology === 'quad' && !separateParts });
  await ctx.progress(40, 'geometry');
  ctx.signal.throwIfAborted();

  const files: GeneratedFile[] = [];
  if (texture) files.push(glbFile(await writeGlb(cloneDocument(doc)), 'base_model', `${job.taskId}-base.glb`));
  await paintModel(doc, {
    seed: digestOf(seed, input.texture_seed),
    palette: subject.palette,
    texture,
    pbr,
    size: textureSide,
    metallic: subject.metallic,
    roughness: subject.roughness,
    tileColumns: separateParts ? 1 : layout.tileColumns,
    views: pictures,
  });
  await ctx.progress(70, 'texture');
  ctx.signal.throwIfAborted();

  if (pbr) {
    files.push(glbFile(await writeGlb(cloneDocument(doc)), 'pbr_model', `${job.taskId}-pbr.glb`));
    for (const material of doc.getRoot().listMaterials()) {
      material.setMetallicRoughnessTexture(null).setMetallicFactor(subject.metallic).setRoughnessFactor(subject.roughness);
    }
  }
  files.unshift(glbFile(await writeGlb(doc), 'model', `${job.taskId}.glb`));
  files.push({ type: 'image', role: 'preview', data: await renderPreview(doc), fileName: `${job.taskId}-preview.png`, mimeType: 'image/png' });
  return {
    files,
    extra: { ...describeModel(doc), topology: separateParts ? 'triangle' : topology, texture, pbr, smart_low_poly: lowPoly, subject: subject.kind },
  };
}

/** The edit's source model (the endpoint names it by reference), read and flattened so node space is world space. */
async function readSource(job: JobOf<EditEndpoint>, ctx: RunContext): Promise<{ doc: Document; source: JobOf<EditEndpoint>['input']['source'] }> {
  await meshoptReady();
  const { source } = job.input;
  const { data } = await ctx.readInput(source.model);
  const doc = await importModel(data);
  await bakeNodeTransforms(doc);
  if (faceCount(doc) === 0) throw new TaskFailedError('the source model has no triangles');
  ctx.signal.throwIfAborted();
  return { doc, source };
}

/** `part_names` of the request, each one a part of the model. */
function partNames(names: string[] | undefined, doc: Document): string[] {
  if (names === undefined) return [];
  const known = meshNodes(doc).map((n) => n.getName());
  const unknown = names.filter((n) => !known.includes(n));
  if (unknown.length > 0) throw new TaskRejectedError(`the model has no part ${unknown.map((n) => `"${n}"`).join(', ')}; its parts are ${known.join(', ')}`);
  return names;
}

/** The edited model as GLB, unless the task was cancelled while the edit ran. */
async function modelOutput(job: JobContext, ctx: RunContext, doc: Document, extra: Record<string, unknown>): Promise<GenerationOutput> {
  ctx.signal.throwIfAborted();
  return { files: [glbFile(await writeGlb(doc), 'model', `${job.taskId}.glb`)], extra: { ...describeModel(doc), ...extra } };
}

/** A rig or animation result as GLB, or FBX (textures embedded as PNG) when out_format asks for it. */
async function riggedOutput(job: JobOf<EditEndpoint<'rig' | 'retarget_animation'>>, ctx: RunContext, doc: Document, extra: Record<string, unknown>): Promise<GenerationOutput> {
  if (job.input.out_format !== 'fbx') return modelOutput(job, ctx, doc, extra);
  ctx.signal.throwIfAborted();
  const textures = new Map<Texture, EncodedTexture & { fileName: string }>();
  for (const [i, texture] of doc.getRoot().listTextures().entries()) {
    const image = texture.getImage();
    if (image) textures.set(texture, { ...(await encodeTexture(Buffer.from(image), 'PNG', KEEP_SIDE)), fileName: `texture_${i}.png` });
  }
  const data = writeFbx(doc, { textures, animations: true });
  return { files: [{ type: '3d', role: 'model', data, fileName: `${job.taskId}.fbx`, mimeType: FBX_MIME }], extra: { ...describeModel(doc, 'fbx'), ...extra } };
}

/** Cells along the largest side for the grid styles; blockgame takes block_size (default 80). */
const STYLE_RESOLUTION: Partial<Record<Style, number>> = { voxel: 40, brick: 24 };
const BLOCK_SIZE = 80;

/** Texture side of a detailed texture run with neither texture nor PBR: the 4K upscale mode. */
const UPSCALE_SIDE = 4096;
/** Convert options the local engine takes without acting on them, with the value that asks for nothing. */
const CONVERT_NO_EFFECT = { force_symmetry: false, pack_uv: false, bake: true, fbx_preset: 'preset_a' } as const;
/** A side no texture reaches: re-encoding keeps the size. */
const KEEP_SIDE = 16384;

type EditRun<Op extends EditOperation> = (job: JobOf<EditEndpoint<Op>>, ctx: RunContext) => Promise<GenerationOutput>;

const EDITS: { [Op in EditOperation]: EditRun<Op> } = {
  async segmentation(job, ctx) {
    const { doc } = await readSource(job, ctx);
    const parts = segmentModel(doc);
    return modelOutput(job, ctx, doc, { parts });
  },

  async completion(job, ctx) {
    const { doc } = await readSource(job, ctx);
    const completed = completeParts(doc, { parts: partNames(job.input.part_names, doc) });
    return modelOutput(job, ctx, doc, { completed });
  },

  async smart_lowpoly(job, ctx) {
    const { doc } = await readSource(job, ctx);
    const quad = job.input.topology === 'quad' || (job.input.topology === undefined && job.input.quad);
    const parts = partNames(job.input.part_names, doc);
    const current = faceCount(doc);
    // Adaptive: a quarter of the faces, within the documented default range.
    const limit = faceLimitOf(job.input.face_limit) ?? Math.min(quad ? 10000 : 20000, Math.max(quad ? 500 : 1000, Math.round((quad ? current / 2 : current) / 4)));
    smartLowpoly(doc, { faceLimit: limit, quad, parts });
    return modelOutput(job, ctx, doc, { topology: quad ? 'quad' : 'triangle', face_limit: limit });
  },

  async texture(job, ctx) {
    const { doc, source } = await readSource(job, ctx);
    const input = job.input;
    const { texture, pbr } = input;
    const quality = input.texture_quality ?? 'standard';
    const parts = partNames(input.part_names, doc);
    if (!texture && !pbr) {
      // Detailed with neither (the check refuses standard): upscale the existing textures.
      for (const t of doc.getRoot().listTextures()) {
        const image = t.getImage();
        if (image) t.setImage(await sharp(Buffer.from(image)).resize(UPSCALE_SIDE, UPSCALE_SIDE, { fit: 'inside' }).png().toBuffer()).setMimeType('image/png');
      }
    } else {
      const prompt = input.texture_prompt ?? {};
      const refs = prompt.image ? [{ ref: prompt.image.url, direction: VIEW_DIRECTIONS.front! }] : prompt.view_images ? viewRefs(prompt.view_images) : [];
      const pictures = await readPictures(refs, ctx, false);
      const seed = digestOf(source.history_id, prompt.text, input.texture_seed, ...pictures.map((p) => p.image));
      const subject = readSubject(prompt.text ?? '', seed);
      if (prompt.style_image) {
        const [style] = await readPictures([{ ref: prompt.style_image.url, direction: VIEW_DIRECTIONS.front! }], ctx, false);
        subject.palette.unshift(await meanColor(style!.image));
      }
      ctx.signal.throwIfAborted();
      await paintModel(doc, { seed, palette: subject.palette, texture, pbr, size: TEXTURE_SIDE[quality], metallic: subject.metallic, roughness: subject.roughness, views: pictures, parts });
    }
    if (input.compress === 'geometry') await doc.transform(meshopt({ encoder: MeshoptEncoder, level: 'medium' }));
    return modelOutput(job, ctx, doc, { texture, pbr, texture_quality: quality });
  },

  async check_riggable(job, ctx) {
    const { doc } = await readSource(job, ctx);
    const report = inspectBody(doc);
    return modelOutput(job, ctx, doc, { ...report });
  },

  async rig(job, ctx) {
    const { doc } = await readSource(job, ctx);
    const rigType = job.input.rig_type ?? 'biped';
    const spec = job.input.spec ?? 'spec_a';
    const bones = rigModel(doc, { rigType, spec });
    return riggedOutput(job, ctx, doc, { rig: { rig_type: rigType, spec, bones } });
  },

  async retarget_animation(job, ctx) {
    const { doc, source } = await readSource(job, ctx);
    const input = job.input;
    const ids = input.animations;
    const skin = doc.getRoot().listSkins()[0];
    if (!skin) throw new TaskRejectedError('the source model has no skeleton: rig it first');
    if (source.rig?.spec === 'spec_b') throw new TaskRejectedError('retargeting needs a rig made with spec_a');
    const jointNames = skin.listJoints().map((j) => j.getName());
    const rigType = (source.rig?.rig_type as RigType | undefined) ?? RIG_TYPES.find((type) => SKELETONS[type].every((t) => jointNames.includes(t.name) || jointNames.includes(jointName(t.name, 'spec_b'))));
    if (!rigType || !RIG_TYPES.includes(rigType)) throw new TaskRejectedError('the source skeleton is not one the local engine made');
    const unavailable = ids.find((id) => !presetOf(id)!.rigTypes.includes(rigType));
    if (unavailable) throw new TaskRejectedError(`animation "${unavailable}" is not available for a ${rigType} rig`);
    const animations = retargetAnimation(doc, {
      animations: ids,
      rigType,
      inPlace: input.animate_in_place === true,
      withGeometry: input.export_with_geometry !== false,
    });
    const rig: RigSpec = source.rig ?? { rig_type: rigType, spec: 'spec_a', bones: jointNames };
    return riggedOutput(job, ctx, doc, { animations, rig });
  },

  async convert(job, ctx) {
    const { doc } = await readSource(job, ctx);
    const input = job.input;
    const format = input.format.toUpperCase() as ConvertFormat;
    if (doc.getRoot().listSkins().length > 0 && (format === 'OBJ' || format === 'STL' || format === '3MF')) throw new TaskRejectedError(`${format} does not support rigged models`);
    const converted = await convertModel(doc, {
      format,
      quad: input.topology === 'quad' || (input.topology === undefined && input.quad === true),
      faceLimit: faceLimitOf(input.face_limit),
      flattenBottom: input.flatten_bottom === true,
      flattenBottomThreshold: input.flatten_bottom_threshold,
      textureSize: input.texture_size,
      textureFormat: input.texture_format,
      pivotToCenterBottom: input.pivot_to_center_bottom === true,
      scaleFactor: input.scale_factor,
      withAnimation: input.with_animation !== false,
      animateInPlace: input.animate_in_place === true,
      parts: partNames(input.part_names, doc),
      exportVertexColors: input.export_vertex_colors === true,
      orientation: input.export_orientation,
    });
    const unapplied = (Object.keys(CONVERT_NO_EFFECT) as (keyof typeof CONVERT_NO_EFFECT)[]).filter((name) => input[name] !== undefined && input[name] !== CONVERT_NO_EFFECT[name]);
    return {
      files: [{ type: '3d', role: 'model', data: converted.data, fileName: `${job.taskId}.${converted.extension}`, mimeType: converted.mimeType }],
      extra: { ...describeModel(doc, format.toLowerCase()), ...(unapplied.length > 0 ? { unapplied_options: unapplied } : {}) },
    };
  },

  async refine(job, ctx) {
    const { doc } = await readSource(job, ctx);
    const before = faceCount(doc);
    refineModel(doc);
    return modelOutput(job, ctx, doc, { refined_from_faces: before });
  },

  async stylize(job, ctx) {
    const { doc, source } = await readSource(job, ctx);
    const { style } = job.input;
    const resolution = style === 'blockgame' ? (job.input.block_size ?? BLOCK_SIZE) : STYLE_RESOLUTION[style];
    const grid = await stylizeModel(doc, { style, seed: digestOf(source.history_id, style), ...(resolution ? { resolution } : {}) });
    ctx.signal.throwIfAborted();
    const gridFacts = grid ? { grid: { origin: grid.origin, cell: grid.cell, size: grid.size } } : {};
    if (style !== 'blockgame' || !grid) return modelOutput(job, ctx, doc, { style, ...gridFacts });
    // The block game's own format is the result; a rendering of the blocks previews it.
    const schematic = writeSchematic(grid);
    return {
      files: [
        { type: '3d', role: 'model', data: schematic.data, fileName: `${job.taskId}.schem`, mimeType: 'application/octet-stream' },
        { type: 'image', role: 'preview', data: await renderPreview(doc), fileName: `${job.taskId}-preview.png`, mimeType: 'image/png' },
      ],
      extra: { format: 'schem', style, block_size: resolution, blocks: schematic.blocks, palette: schematic.palette, ...gridFacts },
    };
  },
};

/** Checks of what the local engine can do with a request, beyond what its endpoint checked: made before the task starts, and again when it runs. */
const CHECKS: { [Op in EditOperation]?: (input: EditInput<Op>) => void } = {
  smart_lowpoly(input) {
    faceLimitOf(input.face_limit);
  },
  retarget_animation(input) {
    const unknown = input.animations.find((id) => !presetOf(id));
    if (unknown) throw new TaskRejectedError(`unknown animation "${unknown}"; the local engine has ${Object.keys(ANIMATION_PRESETS).join(', ')}`);
  },
  convert(input) {
    checkConvertOptions({ format: input.format.toUpperCase(), textureFormat: input.texture_format, orientation: input.export_orientation });
    faceLimitOf(input.face_limit);
  },
};

function checkedHandler<E extends Endpoint>(check: (job: JobOf<E>) => void, run: (job: JobOf<E>, ctx: RunContext) => Promise<GenerationOutput>): LocalHandler<E> {
  return {
    check,
    run: (job, ctx) => {
      check(job);
      return run(job, ctx);
    },
  };
}

const generation = checkedHandler<GenerateEndpoint>((job) => {
  faceLimitOf(job.input.face_limit);
  pictureRefs(job);
}, generate);

function edit<Op extends EditOperation>(op: Op): LocalHandler<EditEndpoint<Op>> {
  const check: ((input: EditInput<Op>) => void) | undefined = CHECKS[op];
  return checkedHandler<EditEndpoint<Op>>((job) => check?.(job.input), EDITS[op]);
}

/** Handlers of the mesh3d endpoints, keyed by task endpoint. */
export const MESH_HANDLERS: { [E in Extract<Endpoint, `mesh3d.${string}`>]: LocalHandler<E> } = {
  'mesh3d.generate.text': generation,
  'mesh3d.generate.image': generation,
  'mesh3d.generate.multiview': generation,
  'mesh3d.edit.segmentation': edit('segmentation'),
  'mesh3d.edit.completion': edit('completion'),
  'mesh3d.edit.smart_lowpoly': edit('smart_lowpoly'),
  'mesh3d.edit.texture': edit('texture'),
  'mesh3d.edit.convert': edit('convert'),
  'mesh3d.edit.check_riggable': edit('check_riggable'),
  'mesh3d.edit.rig': edit('rig'),
  'mesh3d.edit.retarget_animation': edit('retarget_animation'),
  'mesh3d.edit.refine': edit('refine'),
  'mesh3d.edit.stylize': edit('stylize'),
};
