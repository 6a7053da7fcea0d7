/** Words as the local text models read them: lowercase letters and digits of any script. */
const WORD = /[\p{L}\p{N}]+/gu;

export function wordsOf(text: string): string[] {
  return text.toLowerCase().match(WORD) ?? [];
}

/** Tokens an input costs, counted as the local chat model counts them (words and punctuation). */
export function countTextTokens(text: string): number {
  return text.match(/\w+|[^\w\s]/g)?.length ?? 0;
}

/** FNV-1a, 32 bits: a fast, stable hash of a feature to its bucket. */
export function fnv1a(text: string): number {
  let hash = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    hash ^= text.charCodeAt(i);
    hash = Math.imul(hash, 0x01000193);
  }
  return hash >>> 0;
}

/**
 * The features of a text: each word, and each character trigram of each word padded with
 * spaces, so texts sharing words or word parts ("embedding", "embeddings") share features.
 */
export function featuresOf(text: string): string[] {
  const features: string[] = [];
  for (const word of wordsOf(text)) {
    features.push(`w:${word}`);
    const padded = ` ${word} `;
    for (let i = 0; i + 3 <= padded.length; i++) features.push(padded.slice(i, i + 3));
  }
  return features;
}
