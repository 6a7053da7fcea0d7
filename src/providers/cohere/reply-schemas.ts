/** What the rerank adapter reads of a Cohere v2 (or Jina) rerank answer. */
import { Type } from 'typebox';
import { replySchema } from '../upstream-reply.ts';

/** The results, and usage as Cohere's `meta` (billed search units, tokens) or Jina's `usage`. */
export const RerankAnswer = replySchema(Type.Object({
  results: Type.Array(Type.Object({ index: Type.Integer(), relevance_score: Type.Number() })),
  meta: Type.Optional(Type.Object({
    billed_units: Type.Optional(Type.Object({ search_units: Type.Optional(Type.Number()) })),
    tokens: Type.Optional(Type.Object({ input_tokens: Type.Optional(Type.Number()) })),
  })),
  usage: Type.Optional(Type.Object({ total_tokens: Type.Optional(Type.Number()) })),
}));
