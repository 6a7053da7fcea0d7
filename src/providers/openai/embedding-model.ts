import { ApiError } from '../../core/errors.ts';
import type { AdapterContext } from '../adapter-support.ts';
import type { ChatCallOptions, EmbeddingModel, EmbeddingRequest, EmbeddingResult } from '../spec.ts';
import { syncJson, syncRequest } from '../sync-upstream.ts';
import { UpstreamClient } from '../upstream-client.ts';
import { readAnswer } from '../upstream-reply.ts';
import { OPENAI_BASE_URL } from './chat-model.ts';
import { OpenAiEmbeddings } from './reply-schemas.ts';

/** The body sent upstream: the upstream's model name and the caller's fields; float vectors asked for explicitly. */
export function embeddingsBody(request: EmbeddingRequest): Record<string, unknown> {
  return {
    model: request.model.defaultRealModelName,
    input: request.input,
    ...(request.dimensions !== undefined ? { dimensions: request.dimensions } : {}),
    ...(request.user !== undefined ? { user: request.user } : {}),
    encoding_format: 'float',
  };
}

function vectorOf(embedding: number[] | string | undefined, provider: string): number[] {
  if (embedding === undefined) throw new ApiError('upstream_error', `${provider} answered embeddings without an embedding`);
  if (Array.isArray(embedding)) return embedding;
  const bytes = Buffer.from(embedding, 'base64');
  return Array.from(new Float32Array(bytes.buffer, bytes.byteOffset, Math.floor(bytes.length / 4)));
}

/** An OpenAI-compatible embeddings API (POST {base}/embeddings). */
export class OpenAiEmbeddingModel implements EmbeddingModel {
  private readonly client: UpstreamClient;
  private readonly provider: string;

  constructor(client: UpstreamClient, provider: string) {
    this.client = client;
    this.provider = provider;
  }

  async embed(request: EmbeddingRequest, { signal }: ChatCallOptions): Promise<EmbeddingResult> {
    const res = await syncRequest(this.client, { path: '/embeddings', json: embeddingsBody(request), signal });
    const reply = readAnswer(OpenAiEmbeddings, syncJson(res, this.provider, 'embeddings'), this.provider);
    const data = [...(reply.data ?? [])].sort((a, b) => (a.index ?? 0) - (b.index ?? 0));
    if (data.length !== request.input.length) {
      throw new ApiError('upstream_error', `${this.provider} answered ${data.length} embeddings for ${request.input.length} inputs`);
    }
    return { vectors: data.map((item) => vectorOf(item.embedding, this.provider)), promptTokens: reply.usage?.prompt_tokens ?? 0 };
  }
}

/** The UpstreamClient of an OpenAI-compatible provider: its base URL (OpenAI's by default) and bearer key. */
export function openAiCompatibleClient(ctx: AdapterContext): UpstreamClient {
  return new UpstreamClient({
    ...ctx.client,
    baseURL: ctx.baseURL ?? OPENAI_BASE_URL,
    headers: ctx.apiKey ? { authorization: `Bearer ${ctx.apiKey}` } : {},
    fetch: ctx.fetch,
  });
}

export function createOpenAiEmbeddingModel(ctx: AdapterContext): EmbeddingModel {
  return new OpenAiEmbeddingModel(openAiCompatibleClient(ctx), ctx.provider);
}
