/** The body of POST /v1/rerank (the Cohere v2 / Jina shape) and its answer. */
import { Type, type Static } from 'typebox';

/** Documents one request may carry when the model declares no maxDocuments (Cohere's cap). */
export const DEFAULT_MAX_DOCUMENTS = 1000;

export const RerankBody = Type.Object({
  model: Type.String({ minLength: 1, description: 'catalog alias of a text_rerank model' }),
  query: Type.String({ minLength: 1 }),
  documents: Type.Array(Type.Union([Type.String(), Type.Object({ text: Type.String() }, { additionalProperties: true })]), {
    minItems: 1,
    description: 'texts (or {text} objects) to score against the query',
  }),
  top_n: Type.Optional(Type.Integer({ minimum: 1, description: 'keep the best this many (default all)' })),
  return_documents: Type.Optional(Type.Boolean({ description: 'add each result\'s document as {text} (default false)' })),
}, { additionalProperties: false });
export type RerankBody = Static<typeof RerankBody>;

export interface RerankResponse {
  model: string;
  /** Best first. */
  results: { index: number; relevance_score: number; document?: { text: string } }[];
  usage: { total_tokens?: number; search_units?: number };
}
