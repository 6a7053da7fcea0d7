import { wordsOf } from './text-features.ts';

/** Share of the score that comes from whole query words (the rest from word prefixes, for inflections). */
const EXACT_SHARE = 0.8;
const PREFIX_CHARS = 5;

/**
 * Lexical relevance of a document to a query, from 0 to 1: the share of the query's distinct
 * words the document contains (rarer words across the documents weigh more), with partial credit
 * for a shared word start ("rerank" / "reranking").
 */
export function rerankDocuments(query: string, documents: string[]): number[] {
  const queryWords = [...new Set(wordsOf(query))];
  const docs = documents.map((document) => {
    const words = new Set(wordsOf(document));
    return { words, prefixes: new Set([...words].map((w) => w.slice(0, PREFIX_CHARS))) };
  });
  // Inverse document frequency, smoothed so a word in every document still counts a little.
  const weights = queryWords.map((word) => {
    const containing = docs.filter((d) => d.words.has(word)).length;
    return Math.log(1 + (docs.length + 1) / (containing + 1));
  });
  const total = weights.reduce((sum, w) => sum + w, 0);
  if (total === 0) return documents.map(() => 0);
  return docs.map((doc) => {
    let exact = 0;
    let prefix = 0;
    queryWords.forEach((word, i) => {
      if (doc.words.has(word)) exact += weights[i];
      else if (doc.prefixes.has(word.slice(0, PREFIX_CHARS))) prefix += weights[i];
    });
    return Math.round(((EXACT_SHARE * exact + (1 - EXACT_SHARE) * (exact + prefix)) / total) * 1e6) / 1e6;
  });
}
