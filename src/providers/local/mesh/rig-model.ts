/**
 * Rigging: a skeleton of the rig type fitted to the model's bounds, bound as a glTF skin (joint
 * nodes, inverse bind matrices) with each vertex weighted to its nearest bones (JOINTS_0,
 * WEIGHTS_0, four influences).
 */
import type { Document, Node } from '@gltf-transform/core';
import { bufferOf, meshNodes, readArrays, sceneOf, worldSurface, writeArrays, type Vec3 } from './mesh-common.ts';
import { SKELETONS, jointName, type RigType } from './skeleton-templates.ts';

export interface RigModelOptions {
  rigType: RigType;
  /** Joint naming: spec_a or spec_b. */
  spec: string;
  /** Bones influencing each vertex, at most 4 (one JOINTS_0 set). */
  influences: number;
}

export const RIG_MODEL_DEFAULTS: RigModelOptions = { rigType: 'biped', spec: 'spec_a', influences: 4 };

/** Replaces any skeleton of the model with a new one; returns the bone names in skin order. */
export function rigModel(doc: Document, options: Partial<RigModelOptions> = {}): string[] {
  const opts = { ...RIG_MODEL_DEFAULTS, ...options };
  removeRig(doc);
  const template = SKELETONS[opts.rigType];
  const { positions } = worldSurface(doc);
  const min: Vec3 = [Infinity, Infinity, Infinity], max: Vec3 = [-Infinity, -Infinity, -Infinity];
  for (let i = 0; i < positions.length; i++) {
    min[i % 3] = Math.min(min[i % 3]!, positions[i]!);
    max[i % 3] = Math.max(max[i % 3]!, positions[i]!);
  }
  const size: Vec3 = [max[0] - min[0], max[1] - min[1], max[2] - min[2]];
  const world = template.map((joint) => [0, 1, 2].map((k) => min[k]! + joint.at[k]! * size[k]!) as Vec3);

  const nodes = new Map<string, Node>();
  template.forEach((joint, i) => {
    const parentIndex = template.findIndex((p) => p.name === joint.parent);
    const origin = parentIndex >= 0 ? world[parentIndex]! : [0, 0, 0];
    const node = doc.createNode(jointName(joint.name, opts.spec)).setTranslation([world[i]![0] - origin[0]!, world[i]![1] - origin[1]!, world[i]![2] - origin[2]!]);
    if (parentIndex >= 0) nodes.get(template[parentIndex]!.name)!.addChild(node);
    else sceneOf(doc).addChild(node);
    nodes.set(joint.name, node);
  });

  // Each joint's bone runs to its first child; an end joint's bone continues its parent's direction.
  const bones = template.map((joint, i) => {
    const child = template.findIndex((c) => c.parent === joint.name);
    if (child >= 0) return { from: world[i]!, to: world[child]! };
    const parent = template.findIndex((p) => p.name === joint.parent);
    const from = world[i]!, back = parent >= 0 ? world[parent]! : from;
    return { from, to: [0, 1, 2].map((k) => from[k]! + (from[k]! - back[k]!) * 0.4) as Vec3 };
  });

  const skin = doc.createSkin('rig').setSkeleton(nodes.get(template[0]!.name)!);
  for (const joint of template) skin.addJoint(nodes.get(joint.name)!);
  const inverseBind = new Float32Array(template.length * 16);
  world.forEach((p, i) => inverseBind.set([1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0, -p[0], -p[1], -p[2], 1], i * 16));
  skin.setInverseBindMatrices(doc.createAccessor('inverse_bind').setType('MAT4').setArray(inverseBind).setBuffer(bufferOf(doc)));

  const softness = Math.max(...size) * 0.02;
  for (const node of meshNodes(doc)) {
    node.setSkin(skin);
    for (const prim of node.getMesh()!.listPrimitives()) {
      const arrays = readArrays(prim);
      const count = arrays.positions.length / 3;
      arrays.joints = new Uint16Array(count * 4);
      arrays.weights = new Float32Array(count * 4);
      const influences = Math.min(4, opts.influences);
      const nearest = new Int32Array(influences), nearestDistance = new Float64Array(influences);
      for (let v = 0; v < count; v++) {
        const p: Vec3 = [arrays.positions[v * 3]!, arrays.positions[v * 3 + 1]!, arrays.positions[v * 3 + 2]!];
        nearest.fill(-1);
        nearestDistance.fill(Infinity);
        // Insertion into the short sorted list of the closest bones.
        for (let b = 0; b < bones.length; b++) {
          const d = segmentDistance(p, bones[b]!.from, bones[b]!.to);
          for (let k = 0; k < influences; k++) {
            if (d < nearestDistance[k]!) {
              nearest.copyWithin(k + 1, k, influences - 1);
              nearestDistance.copyWithin(k + 1, k, influences - 1);
              nearest[k] = b;
              nearestDistance[k] = d;
              break;
            }
          }
        }
        let total = 0;
        for (let k = 0; k < influences; k++) total += 1 / Math.pow(nearestDistance[k]! + softness, 4);
        for (let k = 0; k < influences; k++) {
          arrays.joints![v * 4 + k] = Math.max(0, nearest[k]!);
          arrays.weights![v * 4 + k] = 1 / Math.pow(nearestDistance[k]! + softness, 4) / total;
        }
      }
      writeArrays(doc, prim, arrays);
    }
  }
  return template.map((joint) => jointName(joint.name, opts.spec));
}

/** Drops skins, their joint nodes and animations: a model is rigged once. */
function removeRig(doc: Document): void {
  const root = doc.getRoot();
  for (const animation of root.listAnimations()) animation.dispose();
  for (const skin of root.listSkins()) {
    for (const joint of skin.listJoints()) joint.dispose();
    skin.dispose();
  }
}

function segmentDistance(p: Vec3, a: Vec3, b: Vec3): number {
  const ab = [b[0] - a[0], b[1] - a[1], b[2] - a[2]];
  const ap = [p[0] - a[0], p[1] - a[1], p[2] - a[2]];
  const length2 = ab[0]! * ab[0]! + ab[1]! * ab[1]! + ab[2]! * ab[2]!;
  const t = length2 > 0 ? Math.min(1, Math.max(0, (ap[0]! * ab[0]! + ap[1]! * ab[1]! + ap[2]! * ab[2]!) / length2)) : 0;
  return Math.hypot(ap[0]! - ab[0]! * t, ap[1]! - ab[1]! * t, ap[2]! - ab[2]! * t);
}
