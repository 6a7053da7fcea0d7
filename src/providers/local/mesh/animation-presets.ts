/**
 * Preset animations (the upstream preset ids): for a joint's role and a moment of the clip, a
 * rotation (Euler angles, radians, applied X then Y then Z) and, for the root, a move in
 * fractions of the model's height.
 */
import type { JointRole, RigType } from './skeleton-templates.ts';

export interface Pose {
  rotation: [number, number, number];
  /** Root only: offset from the rest position, in model heights. */
  move?: [number, number, number];
}

export interface AnimationPreset {
  /** Seconds. */
  duration: number;
  /** Rig types the preset is made for. */
  rigTypes: RigType[];
  /** The pose of a joint at `t` (0..1 through the clip). */
  pose(role: JointRole, t: number): Pose;
}

const TAU = Math.PI * 2;
const still: Pose = { rotation: [0, 0, 0] };

/** A limb swinging forward and back about X, the lower joints bending one way only. */
function swing(role: JointRole, t: number, amplitude: number, bend: number): Pose {
  const wave = Math.sin(TAU * (t + role.phase));
  if (role.segment === 0 || (role.group === 'arm' && role.segment === 1)) return { rotation: [amplitude * wave * (role.group === 'arm' ? -1 : 1), 0, 0] };
  return { rotation: [bend * Math.max(0, role.group === 'arm' ? -wave : wave), 0, 0] };
}

function bipedGait(amplitude: number, bend: number, bounce: number, stride: number): AnimationPreset['pose'] {
  return (role, t) => {
    if (role.group === 'leg' || role.group === 'arm') return swing(role, t, role.group === 'arm' ? amplitude * 0.8 : amplitude, bend);
    if (role.group === 'spine') return { rotation: [0.05, 0.08 * Math.sin(TAU * t), 0] };
    if (role.group === 'root') return { rotation: [0, 0, 0], move: [0, bounce * Math.abs(Math.sin(TAU * t)), stride * t] };
    return still;
  };
}

export const ANIMATION_PRESETS: Record<string, AnimationPreset> = {
  'preset:idle': {
    duration: 3,
    rigTypes: ['biped', 'quadruped', 'hexapod', 'octopod', 'avian', 'serpentine', 'aquatic'],
    pose: (role, t) => {
      const breath = Math.sin(TAU * t);
      if (role.group === 'spine') return { rotation: [0.03 * breath, 0, 0] };
      if (role.group === 'head') return { rotation: [0, 0.15 * Math.sin(TAU * t + 1), 0] };
      if (role.group === 'tail' || role.group === 'fin') return { rotation: [0, 0.2 * breath, 0] };
      if (role.group === 'arm' && role.segment === 1) return { rotation: [0, 0, 0.04 * breath * role.side] };
      return still;
    },
  },
  'preset:walk': { duration: 1.1, rigTypes: ['biped'], pose: bipedGait(0.45, 0.6, 0.02, 0.6) },
  'preset:run': { duration: 0.7, rigTypes: ['biped'], pose: bipedGait(0.8, 1.2, 0.06, 1.4) },
  'preset:jump': {
    duration: 1.2,
    rigTypes: ['biped'],
    pose: (role, t) => {
      const crouch = Math.max(0, Math.sin(Math.PI * Math.min(1, t / 0.3))) * (t < 0.3 ? 1 : 0) + (t > 0.8 ? Math.sin(Math.PI * (t - 0.8) / 0.2) : 0);
      const air = t > 0.3 && t < 0.8 ? Math.sin((Math.PI * (t - 0.3)) / 0.5) : 0;
      if (role.group === 'root') return { rotation: [0, 0, 0], move: [0, 0.35 * air - 0.1 * crouch, 0] };
      if (role.group === 'leg') return { rotation: [role.segment === 0 ? -0.8 * crouch : role.segment === 1 ? 1.4 * crouch : -0.6 * crouch, 0, 0] };
      if (role.group === 'arm' && role.segment === 1) return { rotation: [-1.2 * air, 0, 0] };
      return still;
    },
  },
  'preset:turn': {
    duration: 1.5,
    rigTypes: ['biped'],
    pose: (role, t) => (role.group === 'root' ? { rotation: [0, (Math.PI / 2) * (1 - Math.cos(Math.PI * t)) * 0.5, 0], move: [0, 0, 0] } : role.group === 'leg' ? swing(role, t * 2, 0.2, 0.3) : still),
  },
  'preset:hurt': {
    duration: 1,
    rigTypes: ['biped'],
    pose: (role, t) => {
      const hit = Math.exp(-6 * t) * Math.sin(Math.PI * Math.min(1, t * 4));
      if (role.group === 'spine' || role.group === 'neck') return { rotation: [-0.35 * hit, 0, 0] };
      if (role.group === 'arm' && role.segment === 1) return { rotation: [-0.6 * hit, 0, 0] };
      return still;
    },
  },
  'preset:fall': {
    duration: 1.4,
    rigTypes: ['biped'],
    pose: (role, t) => {
      const f = Math.min(1, t * t * 1.6);
      if (role.group === 'root') return { rotation: [(-Math.PI / 2) * f, 0, 0], move: [0, -0.4 * f, -0.3 * f] };
      if (role.group === 'arm' && role.segment === 1) return { rotation: [-1.5 * f, 0, 0] };
      return still;
    },
  },
  'preset:slash': {
    duration: 1,
    rigTypes: ['biped'],
    pose: (role, t) => {
      const swingArm = Math.sin(Math.PI * t);
      if (role.group === 'spine') return { rotation: [0, 0.5 * Math.sin(TAU * t), 0] };
      if (role.group === 'arm' && role.side === -1 && role.segment === 1) return { rotation: [-2.2 * swingArm, 0, 1.2 * Math.sin(TAU * t)] };
      return still;
    },
  },
  'preset:shoot': {
    duration: 1,
    rigTypes: ['biped'],
    pose: (role, t) => {
      const recoil = t > 0.5 ? Math.exp(-10 * (t - 0.5)) : 0;
      if (role.group === 'arm' && role.segment === 1) return { rotation: [-1.45 + 0.25 * recoil, 0, 0] };
      if (role.group === 'spine') return { rotation: [-0.05 * recoil, 0, 0] };
      return still;
    },
  },
  'preset:dive': {
    duration: 1.3,
    rigTypes: ['biped'],
    pose: (role, t) => {
      const f = Math.min(1, t * 1.5);
      if (role.group === 'root') return { rotation: [(Math.PI / 2) * f, 0, 0], move: [0, 0.2 * Math.sin(Math.PI * t) - 0.3 * f, 0.8 * t] };
      if (role.group === 'arm' && role.segment === 1) return { rotation: [-2.8 * f, 0, 0] };
      return still;
    },
  },
  'preset:climb': {
    duration: 1.6,
    rigTypes: ['biped'],
    pose: (role, t) => {
      const wave = Math.sin(TAU * (t + role.phase));
      if (role.group === 'arm' && role.segment === 1) return { rotation: [-2.4 + 0.4 * wave, 0, 0] };
      if (role.group === 'leg' && role.segment === 0) return { rotation: [-0.6 - 0.4 * wave, 0, 0] };
      if (role.group === 'leg' && role.segment === 1) return { rotation: [0.8 + 0.4 * wave, 0, 0] };
      if (role.group === 'root') return { rotation: [0, 0, 0], move: [0, 0.4 * t, 0] };
      return still;
    },
  },
  'preset:quadruped:walk': {
    duration: 1,
    rigTypes: ['quadruped'],
    pose: (role, t) => {
      if (role.group === 'leg') return swing(role, t, 0.35, 0.5);
      if (role.group === 'tail') return { rotation: [0, 0.3 * Math.sin(TAU * t), 0] };
      if (role.group === 'head') return { rotation: [0.08 * Math.sin(TAU * 2 * t), 0, 0] };
      if (role.group === 'root') return { rotation: [0, 0, 0], move: [0, 0, 0.5 * t] };
      return still;
    },
  },
  'preset:hexapod:walk': { duration: 0.8, rigTypes: ['hexapod'], pose: manyLegsWalk },
  'preset:octopod:walk': { duration: 0.9, rigTypes: ['octopod'], pose: manyLegsWalk },
  'preset:serpentine:march': {
    duration: 1.5,
    rigTypes: ['serpentine'],
    pose: (role, t) => (role.group === 'spine' ? { rotation: [0, 0.35 * Math.sin(TAU * (t - role.phase)), 0] } : role.group === 'root' ? { rotation: [0, 0, 0], move: [0, 0, 0.3 * t] } : still),
  },
  'preset:aquatic:march': {
    duration: 1.2,
    rigTypes: ['aquatic'],
    pose: (role, t) => {
      if (role.group === 'spine') return { rotation: [0, 0.2 * role.phase * Math.sin(TAU * (t - role.phase)), 0] };
      if (role.group === 'tail') return { rotation: [0, 0.5 * Math.sin(TAU * t - 2), 0] };
      if (role.group === 'fin') return { rotation: [0, 0, 0.4 * role.side * Math.sin(TAU * (t + role.phase))] };
      if (role.group === 'root') return { rotation: [0, 0, 0], move: [0, 0, 0.4 * t] };
      return still;
    },
  },
};

/** The preset behind an id; the `preset:biped:<name>` form names the biped preset `preset:<name>`. */
export function presetOf(id: string): AnimationPreset | undefined {
  return ANIMATION_PRESETS[id] ?? ANIMATION_PRESETS[id.replace(/^preset:biped:/, 'preset:')];
}

/** Legs stepping in two alternating sets: a swing about the vertical axis while lifted. */
function manyLegsWalk(role: JointRole, t: number): Pose {
  if (role.group === 'root') return { rotation: [0, 0, 0], move: [0, 0, 0.4 * t] };
  if (role.group !== 'leg') return still;
  const wave = Math.sin(TAU * (t + role.phase));
  if (role.segment === 0) return { rotation: [0, 0.35 * wave, 0.25 * Math.max(0, Math.cos(TAU * (t + role.phase))) * role.side] };
  return still;
}
