/** The body of POST /v1/embeddings and /openai/v1/embeddings (OpenAI's embeddings API) and its answer. */
import { Type, type Static } from 'typebox';

/** OpenAI's limit of texts per request. */
export const MAX_EMBEDDING_INPUTS = 2048;

export const EmbeddingsBody = Type.Object({
  model: Type.String({ minLength: 1, description: 'catalog alias of a text_embedding model' }),
  input: Type.Union([
    Type.String({ minLength: 1 }),
    Type.Array(Type.String({ minLength: 1 }), { minItems: 1, maxItems: MAX_EMBEDDING_INPUTS }),
    Type.Array(Type.Integer()),
    Type.Array(Type.Array(Type.Integer())),
  ], { description: `a text or a list of up to ${MAX_EMBEDDING_INPUTS} texts, none empty (token arrays are refused: send text)` }),
  dimensions: Type.Optional(Type.Integer({ minimum: 1, description: 'vector length; one of the model\'s text_embedding.dimensions when it lists them' })),
  encoding_format: Type.Optional(Type.Union([Type.Literal('float'), Type.Literal('base64')], { description: 'float (numbers) or base64 (little-endian float32 bytes); default float' })),
  user: Type.Optional(Type.String()),
}, { additionalProperties: false });
export type EmbeddingsBody = Static<typeof EmbeddingsBody>;

export interface EmbeddingsResponse {
  object: 'list';
  data: { object: 'embedding'; index: number; embedding: number[] | string }[];
  model: string;
  usage: { prompt_tokens: number; total_tokens: number };
}
