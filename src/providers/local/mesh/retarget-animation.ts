/**
 * Animation retargeting: preset clips sampled onto the model's own skeleton as glTF animations,
 * one per preset, with rotation channels on the joints and a translation channel on the root.
 */
import type { Document, Node } from '@gltf-transform/core';
import { bufferOf, meshNodes, worldSurface } from './mesh-common.ts';
import { presetOf } from './animation-presets.ts';
import { SKELETONS, jointName, type JointRole, type RigType } from './skeleton-templates.ts';

export interface RetargetAnimationOptions {
  /** Preset ids, e.g. preset:walk; each becomes an animation of that name. */
  animations: string[];
  rigType: RigType;
  /** Keep the root over its rest place (no travel). */
  inPlace: boolean;
  /** Keep the meshes; without them the file holds the skeleton and its animations. */
  withGeometry: boolean;
  /** Samples per second (the clips are baked). */
  fps: number;
}

export const RETARGET_ANIMATION_DEFAULTS: RetargetAnimationOptions = { animations: ['preset:idle'], rigType: 'biped', inPlace: false, withGeometry: true, fps: 30 };

/** Adds the animations to the model's skin; returns their names. */
export function retargetAnimation(doc: Document, options: Partial<RetargetAnimationOptions> = {}): string[] {
  const opts = { ...RETARGET_ANIMATION_DEFAULTS, ...options };
  const skin = doc.getRoot().listSkins()[0];
  if (!skin) throw new Error('the model has no skeleton');
  const template = SKELETONS[opts.rigType];
  const roles = new Map<Node, JointRole>();
  for (const joint of skin.listJoints()) {
    const match = template.find((t) => t.name === joint.getName() || jointName(t.name, 'spec_b') === joint.getName());
    if (match) roles.set(joint, match.role);
  }
  if (roles.size === 0) throw new Error(`the skeleton has no ${opts.rigType} joints`);
  const { positions } = worldSurface(doc);
  let low = Infinity, high = -Infinity;
  for (let i = 1; i < positions.length; i += 3) [low, high] = [Math.min(low, positions[i]!), Math.max(high, positions[i]!)];
  const height = Number.isFinite(high - low) && high > low ? high - low : 1;

  const buffer = bufferOf(doc);
  for (const id of opts.animations) {
    const preset = presetOf(id)!;
    const frames = Math.max(2, Math.round(preset.duration * opts.fps) + 1);
    const times = Float32Array.from({ length: frames }, (_, i) => (preset.duration * i) / (frames - 1));
    const input = doc.createAccessor(`${id}_time`).setType('SCALAR').setArray(times).setBuffer(buffer);
    const animation = doc.createAnimation(id);
    for (const [joint, role] of roles) {
      const rest = joint.getRotation();
      const rotations = new Float32Array(frames * 4);
      const moves = role.group === 'root' ? new Float32Array(frames * 3) : null;
      const origin = joint.getTranslation();
      for (let f = 0; f < frames; f++) {
        const pose = preset.pose(role, f / (frames - 1));
        rotations.set(multiply(rest, eulerToQuaternion(pose.rotation)), f * 4);
        if (moves) {
          const move = pose.move ?? [0, 0, 0];
          const travel = opts.inPlace ? 0 : 1;
          moves.set([origin[0] + move[0] * height * travel, origin[1] + move[1] * height, origin[2] + move[2] * height * travel], f * 3);
        }
      }
      const channel = (path: 'rotation' | 'translation', values: Float32Array, type: 'VEC4' | 'VEC3') => {
        const sampler = doc.createAnimationSampler().setInput(input).setOutput(doc.createAccessor().setType(type).setArray(values).setBuffer(buffer)).setInterpolation('LINEAR');
        animation.addSampler(sampler).addChannel(doc.createAnimationChannel().setTargetNode(joint).setTargetPath(path).setSampler(sampler));
      };
      channel('rotation', rotations, 'VEC4');
      if (moves) channel('translation', moves, 'VEC3');
    }
  }
  if (!opts.withGeometry) {
    for (const node of meshNodes(doc)) {
      node.getMesh()!.dispose();
      node.dispose();
    }
  }
  return opts.animations;
}

/** The rotation X then Y then Z (matrix Rz·Ry·Rx) as a quaternion [x, y, z, w]. */
function eulerToQuaternion([x, y, z]: [number, number, number]): [number, number, number, number] {
  const qx: [number, number, number, number] = [Math.sin(x / 2), 0, 0, Math.cos(x / 2)];
  const qy: [number, number, number, number] = [0, Math.sin(y / 2), 0, Math.cos(y / 2)];
  const qz: [number, number, number, number] = [0, 0, Math.sin(z / 2), Math.cos(z / 2)];
  return multiply(qz, multiply(qy, qx));
}

function multiply(a: ArrayLike<number>, b: ArrayLike<number>): [number, number, number, number] {
  const [ax, ay, az, aw] = [a[0]!, a[1]!, a[2]!, a[3]!];
  const [bx, by, bz, bw] = [b[0]!, b[1]!, b[2]!, b[3]!];
  return [aw * bx + ax * bw + ay * bz - az * by, aw * by - ax * bz + ay * bw + az * bx, aw * bz + ax * by - ay * bx + az * bw, aw * bw - ax * bx - ay * by - az * bz];
}
