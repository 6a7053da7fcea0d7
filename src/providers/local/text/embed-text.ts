import { featuresOf, fnv1a } from './text-features.ts';

/** Weight of a whole word against one of its trigrams: sharing a word says more than sharing a part. */
const WORD_WEIGHT = 2;

/**
 * A deterministic embedding of `dimensions` numbers: hashed word and trigram features (the
 * hashing trick, with a sign bit so collisions cancel out on average), L2-normalised. Texts that
 * share words score a higher cosine than unrelated ones; the same text always gives the same vector.
 */
export function embedText(text: string, dimensions: number): number[] {
  const vector = new Float64Array(dimensions);
  for (const feature of featuresOf(text)) {
    const hash = fnv1a(feature);
    const weight = feature.startsWith('w:') ? WORD_WEIGHT : 1;
    vector[hash % dimensions] += (hash & 0x80000000) === 0 ? weight : -weight;
  }
  let norm = 0;
  for (const value of vector) norm += value * value;
  norm = Math.sqrt(norm);
  // A text with no word at all (punctuation only) gets a fixed unit vector instead of zeros.
  if (norm === 0) {
    vector[0] = 1;
    norm = 1;
  }
  // float32 precision, as the vectors travel (base64 of float32 on the wire).
  return Array.from(vector, (value) => Math.fround(value / norm));
}
