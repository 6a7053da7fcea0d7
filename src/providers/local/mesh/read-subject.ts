/** What a prompt says about the subject: its kind, colours and surface. */
import { seededRandom, type Vec3 } from './mesh-common.ts';
import type { SubjectKind } from './generate-model.ts';

export interface Subject {
  kind: SubjectKind;
  words: string[];
  palette: Vec3[];
  metallic: number;
  roughness: number;
}

const KIND_WORDS: Record<Exclude<SubjectKind, 'object'>, string[]> = {
  biped: ['person', 'man', 'woman', 'boy', 'girl', 'child', 'human', 'character', 'robot', 'knight', 'warrior', 'soldier', 'hero', 'wizard', 'witch', 'doll', 'figure', 'figurine', 'astronaut', 'ninja', 'king', 'queen', 'princess', 'prince', 'zombie', 'elf', 'dwarf', 'goblin', 'orc', 'samurai', 'pirate', 'android', 'mannequin', 'humanoid', 'monk', 'chef', 'student'],
  quadruped: ['dog', 'cat', 'horse', 'cow', 'wolf', 'fox', 'lion', 'tiger', 'bear', 'deer', 'pig', 'sheep', 'goat', 'elephant', 'giraffe', 'zebra', 'rabbit', 'puppy', 'kitten', 'dinosaur', 'animal', 'pony', 'unicorn', 'leopard', 'cheetah', 'panda', 'camel', 'donkey', 'rhino', 'hippo', 'mouse', 'rat', 'lizard'],
};

const COLOR_WORDS: Record<string, Vec3> = {
  red: [0.8, 0.12, 0.1], crimson: [0.65, 0.05, 0.15], orange: [0.95, 0.5, 0.1], yellow: [0.95, 0.85, 0.2], gold: [0.85, 0.65, 0.2], golden: [0.85, 0.65, 0.2],
  green: [0.2, 0.6, 0.25], lime: [0.6, 0.85, 0.2], teal: [0.1, 0.5, 0.5], cyan: [0.2, 0.8, 0.85], blue: [0.15, 0.3, 0.8], navy: [0.08, 0.1, 0.4],
  purple: [0.5, 0.2, 0.65], violet: [0.55, 0.35, 0.8], pink: [0.95, 0.55, 0.7], magenta: [0.85, 0.2, 0.65], brown: [0.45, 0.28, 0.15], wooden: [0.55, 0.38, 0.2],
  wood: [0.55, 0.38, 0.2], black: [0.06, 0.06, 0.07], white: [0.93, 0.93, 0.92], gray: [0.5, 0.5, 0.5], grey: [0.5, 0.5, 0.5], silver: [0.75, 0.76, 0.78],
  bronze: [0.6, 0.4, 0.2], copper: [0.72, 0.42, 0.25], beige: [0.85, 0.78, 0.62],
};

const METAL_WORDS = ['metal', 'metallic', 'steel', 'iron', 'gold', 'golden', 'silver', 'chrome', 'robot', 'bronze', 'copper', 'android', 'armor', 'armour'];

/** The subject of `text`; colours the text does not name come from the seed. */
export function readSubject(text: string, seed: Buffer): Subject {
  const words = text.toLowerCase().split(/[^\p{L}\p{N}]+/u).filter(Boolean);
  const kind = (Object.keys(KIND_WORDS) as Exclude<SubjectKind, 'object'>[]).find((k) => KIND_WORDS[k].some((w) => words.includes(w))) ?? 'object';
  const random = seededRandom(seed);
  const named = words.filter((w) => w in COLOR_WORDS).map((w) => COLOR_WORDS[w]!);
  const palette: Vec3[] = [...named];
  while (palette.length < 6) palette.push(hsl(random(), 0.35 + random() * 0.4, 0.35 + random() * 0.3));
  const metal = words.some((w) => METAL_WORDS.includes(w));
  return { kind, words, palette, metallic: metal ? 0.85 : 0, roughness: metal ? 0.3 : 0.75 };
}

function hsl(h: number, s: number, l: number): Vec3 {
  const f = (n: number) => {
    const k = (n + h * 12) % 12;
    return l - s * Math.min(l, 1 - l) * Math.max(-1, Math.min(k - 3, 9 - k, 1));
  };
  return [f(0), f(8), f(4)];
}
