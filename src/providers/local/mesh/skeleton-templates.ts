/**
 * Skeletons per rig type: joints placed at fractions of the model's bounds
 * (x: its right side 0 to its own left 1; y: bottom 0 to top 1; z: back 0 to front 1), with the
 * role each joint plays in the preset animations.
 */
import type { Vec3 } from './mesh-common.ts';

export const RIG_TYPES = ['biped', 'quadruped', 'hexapod', 'octopod', 'avian', 'serpentine', 'aquatic'] as const;
export type RigType = (typeof RIG_TYPES)[number];

/** How a joint moves in the presets: its limb group, side (-1 right, 1 left), gait phase and place along the limb. */
export interface JointRole {
  group: 'root' | 'spine' | 'neck' | 'head' | 'arm' | 'leg' | 'tail' | 'wing' | 'fin';
  side: -1 | 0 | 1;
  /** Fraction of a gait cycle this limb lags behind. */
  phase: number;
  /** 0 for the joint nearest the body, counting outwards (or along a chain). */
  segment: number;
}

export interface JointTemplate {
  /** The spec_a name (PascalCase, sides as a Left/Right prefix). */
  name: string;
  parent: string | null;
  at: Vec3;
  role: JointRole;
}

const j = (name: string, parent: string | null, at: Vec3, role: Partial<JointRole> & Pick<JointRole, 'group'>): JointTemplate => ({
  name,
  parent,
  at,
  role: { side: 0, phase: 0, segment: 0, ...role },
});

/** Mirrors a left-side limb onto the right (x to 1 - x), half a cycle apart. */
function mirrored(limb: JointTemplate[]): JointTemplate[] {
  const rename = (n: string | null) => n?.replace(/^Left/, 'Right') ?? null;
  return limb.map((joint) => ({
    name: rename(joint.name)!,
    parent: joint.parent?.startsWith('Left') ? rename(joint.parent) : joint.parent,
    at: [1 - joint.at[0], joint.at[1], joint.at[2]],
    role: { ...joint.role, side: -1, phase: (joint.role.phase + 0.5) % 1 },
  }));
}

/** A left-side limb and its mirror on the right. */
const bothSides = (left: JointTemplate[]): JointTemplate[] => [...left, ...mirrored(left)];

/** Legs of a many-legged body: pairs along z, alternating phase like a tripod or wave gait. */
function legPairs(parent: string, zs: number[]): JointTemplate[] {
  return zs.flatMap((z, i) => {
    const phase = i % 2 === 0 ? 0 : 0.5;
    const left = [
      j(`LeftLeg${i + 1}`, parent, [0.68, 0.5, z], { group: 'leg', side: 1, phase, segment: 0 }),
      j(`LeftLeg${i + 1}Knee`, `LeftLeg${i + 1}`, [0.86, 0.35, z], { group: 'leg', side: 1, phase, segment: 1 }),
      j(`LeftLeg${i + 1}Foot`, `LeftLeg${i + 1}Knee`, [0.97, 0.03, z], { group: 'leg', side: 1, phase, segment: 2 }),
    ];
    return bothSides(left);
  });
}

/** A chain of `count` joints from `from` to `to`, each the parent of the next. */
function chain(prefix: string, parent: string | null, from: Vec3, to: Vec3, count: number, group: JointRole['group']): JointTemplate[] {
  return Array.from({ length: count }, (_, i) => {
    const f = i / (count - 1);
    const at: Vec3 = [from[0] + (to[0] - from[0]) * f, from[1] + (to[1] - from[1]) * f, from[2] + (to[2] - from[2]) * f];
    return j(`${prefix}${i}`, i === 0 ? parent : `${prefix}${i - 1}`, at, { group, segment: i, phase: f });
  });
}

const BIPED_LEFT: JointTemplate[] = [
  j('LeftShoulder', 'Chest', [0.56, 0.74, 0.5], { group: 'arm', side: 1, segment: 0 }),
  j('LeftArm', 'LeftShoulder', [0.64, 0.75, 0.5], { group: 'arm', side: 1, segment: 1 }),
  j('LeftForeArm', 'LeftArm', [0.79, 0.58, 0.5], { group: 'arm', side: 1, segment: 2 }),
  j('LeftHand', 'LeftForeArm', [0.93, 0.41, 0.5], { group: 'arm', side: 1, segment: 3 }),
  j('LeftUpLeg', 'Hips', [0.62, 0.44, 0.5], { group: 'leg', side: 1, segment: 0 }),
  j('LeftLeg', 'LeftUpLeg', [0.62, 0.23, 0.5], { group: 'leg', side: 1, segment: 1 }),
  j('LeftFoot', 'LeftLeg', [0.62, 0.03, 0.55], { group: 'leg', side: 1, segment: 2 }),
];

const QUADRUPED_LEFT: JointTemplate[] = [
  j('LeftFrontUpLeg', 'Chest', [0.8, 0.55, 0.72], { group: 'leg', side: 1, phase: 0, segment: 0 }),
  j('LeftFrontLeg', 'LeftFrontUpLeg', [0.8, 0.3, 0.72], { group: 'leg', side: 1, phase: 0, segment: 1 }),
  j('LeftFrontFoot', 'LeftFrontLeg', [0.8, 0.03, 0.72], { group: 'leg', side: 1, phase: 0, segment: 2 }),
  j('LeftHindUpLeg', 'Hips', [0.8, 0.55, 0.28], { group: 'leg', side: 1, phase: 0.5, segment: 0 }),
  j('LeftHindLeg', 'LeftHindUpLeg', [0.8, 0.3, 0.28], { group: 'leg', side: 1, phase: 0.5, segment: 1 }),
  j('LeftHindFoot', 'LeftHindLeg', [0.8, 0.03, 0.28], { group: 'leg', side: 1, phase: 0.5, segment: 2 }),
];

const AVIAN_LEFT: JointTemplate[] = [
  j('LeftWing', 'Spine', [0.6, 0.62, 0.55], { group: 'wing', side: 1, segment: 0 }),
  j('LeftWingMid', 'LeftWing', [0.8, 0.62, 0.5], { group: 'wing', side: 1, segment: 1 }),
  j('LeftWingTip', 'LeftWingMid', [0.98, 0.62, 0.45], { group: 'wing', side: 1, segment: 2 }),
  j('LeftThigh', 'Hips', [0.58, 0.4, 0.45], { group: 'leg', side: 1, segment: 0 }),
  j('LeftShin', 'LeftThigh', [0.58, 0.2, 0.45], { group: 'leg', side: 1, segment: 1 }),
  j('LeftFoot', 'LeftShin', [0.58, 0.02, 0.5], { group: 'leg', side: 1, segment: 2 }),
];

export const SKELETONS: Record<RigType, JointTemplate[]> = {
  biped: [
    j('Hips', null, [0.5, 0.45, 0.5], { group: 'root' }),
    j('Spine', 'Hips', [0.5, 0.55, 0.5], { group: 'spine', segment: 0 }),
    j('Chest', 'Spine', [0.5, 0.66, 0.5], { group: 'spine', segment: 1 }),
    j('Neck', 'Chest', [0.5, 0.78, 0.5], { group: 'neck' }),
    j('Head', 'Neck', [0.5, 0.86, 0.5], { group: 'head' }),
    ...bothSides(BIPED_LEFT),
  ],
  quadruped: [
    j('Hips', null, [0.5, 0.62, 0.28], { group: 'root' }),
    j('Spine', 'Hips', [0.5, 0.64, 0.48], { group: 'spine', segment: 0 }),
    j('Chest', 'Spine', [0.5, 0.66, 0.7], { group: 'spine', segment: 1 }),
    j('Neck', 'Chest', [0.5, 0.76, 0.84], { group: 'neck' }),
    j('Head', 'Neck', [0.5, 0.86, 0.94], { group: 'head' }),
    j('Tail', 'Hips', [0.5, 0.68, 0.12], { group: 'tail', segment: 0 }),
    j('TailTip', 'Tail', [0.5, 0.8, 0.02], { group: 'tail', segment: 1 }),
    // Diagonal pairs move together: the right legs are half a cycle from their left partners.
    ...bothSides(QUADRUPED_LEFT),
  ],
  hexapod: [
    j('Thorax', null, [0.5, 0.5, 0.5], { group: 'root' }),
    j('Abdomen', 'Thorax', [0.5, 0.5, 0.15], { group: 'tail' }),
    j('Head', 'Thorax', [0.5, 0.55, 0.9], { group: 'head' }),
    ...legPairs('Thorax', [0.75, 0.5, 0.25]),
  ],
  octopod: [
    j('Body', null, [0.5, 0.5, 0.5], { group: 'root' }),
    j('Abdomen', 'Body', [0.5, 0.5, 0.12], { group: 'tail' }),
    j('Head', 'Body', [0.5, 0.55, 0.92], { group: 'head' }),
    ...legPairs('Body', [0.8, 0.6, 0.4, 0.2]),
  ],
  avian: [
    j('Hips', null, [0.5, 0.45, 0.45], { group: 'root' }),
    j('Spine', 'Hips', [0.5, 0.55, 0.55], { group: 'spine' }),
    j('Neck', 'Spine', [0.5, 0.7, 0.7], { group: 'neck' }),
    j('Head', 'Neck', [0.5, 0.85, 0.85], { group: 'head' }),
    j('Tail', 'Hips', [0.5, 0.45, 0.1], { group: 'tail' }),
    ...bothSides(AVIAN_LEFT),
  ],
  serpentine: [j('Root', null, [0.5, 0.5, 0.5], { group: 'root' }), ...chain('Spine', 'Root', [0.5, 0.5, 0.98], [0.5, 0.5, 0.02], 8, 'spine')],
  aquatic: [
    j('Root', null, [0.5, 0.5, 0.5], { group: 'root' }),
    ...chain('Spine', 'Root', [0.5, 0.5, 0.95], [0.5, 0.5, 0.08], 5, 'spine'),
    j('TailFin', 'Spine4', [0.5, 0.5, 0.0], { group: 'tail', segment: 1 }),
    j('LeftFin', 'Spine1', [0.8, 0.45, 0.65], { group: 'fin', side: 1 }),
    j('RightFin', 'Spine1', [0.2, 0.45, 0.65], { group: 'fin', side: -1, phase: 0.5 }),
    j('DorsalFin', 'Spine2', [0.5, 0.9, 0.5], { group: 'fin' }),
  ],
};

/** A joint's name in a naming spec: spec_a as the template says, spec_b snake case with _l / _r suffixes. */
export function jointName(name: string, spec: string): string {
  if (spec !== 'spec_b') return name;
  const side = name.startsWith('Left') ? '_l' : name.startsWith('Right') ? '_r' : '';
  const base = name.replace(/^(Left|Right)/, '').replace(/([a-z0-9])([A-Z])/g, '$1_$2').toLowerCase();
  return base + side;
}
