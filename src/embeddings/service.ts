/**
 * Embeddings: the model checked against the catalog (text_embedding, its dimensions), the texts
 * embedded by the model's engine, the answer in OpenAI's list shape.
 */
import type { LiveModel } from '../catalog/catalog.ts';
import type { CapabilityName } from '../catalog/schema.ts';
import { ApiError } from '../core/errors.ts';
import type { SyncModelRegistry } from '../providers/registry.ts';
import type { EmbeddingModel } from '../providers/spec.ts';
import type { EmbeddingsBody, EmbeddingsResponse } from './schemas.ts';

export interface EmbeddingServiceDeps {
  models: SyncModelRegistry<EmbeddingModel>;
  /** The catalog model a request may use, or the contract's 404/400. */
  resolveModel(alias: string, capabilities: readonly CapabilityName[]): LiveModel;
}

/** Little-endian float32 bytes in base64, as OpenAI's `encoding_format: "base64"` sends a vector. */
export function float32Base64(vector: number[]): string {
  const bytes = Buffer.alloc(vector.length * 4);
  vector.forEach((value, i) => bytes.writeFloatLE(value, i * 4));
  return bytes.toString('base64');
}

function textsOf(input: EmbeddingsBody['input']): string[] {
  if (typeof input === 'string') return [input];
  if (input.length > 0 && typeof input[0] !== 'string') {
    throw new ApiError('unsupported_parameter', 'input as token arrays is not supported: send the text', 'input');
  }
  const texts = input as string[];
  const blank = texts.findIndex((text) => !text.trim());
  if (blank >= 0) throw new ApiError('invalid_parameter', `input[${blank}] must not be blank`, `input[${blank}]`);
  return texts;
}

export class EmbeddingService {
  private readonly deps: EmbeddingServiceDeps;

  constructor(deps: EmbeddingServiceDeps) {
    this.deps = deps;
  }

  async embed(body: EmbeddingsBody, signal: AbortSignal): Promise<EmbeddingsResponse> {
    const model = this.deps.resolveModel(body.model, ['text_embedding']);
    const input = textsOf(body.input);
    const allowed = model.capabilities.text_embedding?.dimensions;
    if (body.dimensions !== undefined && allowed?.length && !allowed.includes(body.dimensions)) {
      throw new ApiError('invalid_parameter', `model ${model.alias} makes vectors of ${allowed.join(', ')} dimensions`, 'dimensions');
    }
    const result = await this.deps.models.modelFor(model).embed({ model, input, dimensions: body.dimensions, user: body.user }, { signal });
    const base64 = body.encoding_format === 'base64';
    return {
      object: 'list',
      data: result.vectors.map((vector, index) => ({ object: 'embedding', index, embedding: base64 ? float32Base64(vector) : vector })),
      model: model.alias,
      usage: { prompt_tokens: result.promptTokens, total_tokens: result.promptTokens },
    };
  }
}
