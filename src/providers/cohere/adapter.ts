import type { AdapterContext } from '../adapter-support.ts';
import type { ChatCallOptions, RerankModel, RerankRequest, RerankResult } from '../spec.ts';
import { syncJson, syncRequest } from '../sync-upstream.ts';
import { UpstreamClient } from '../upstream-client.ts';
import { rerankBody, rerankResult } from './mapping.ts';

/** Cohere's v2 API, where the adapter's provider is served when its settings name no base_url (Jina's is https://api.jina.ai/v1). */
const COHERE_BASE_URL = 'https://api.cohere.com/v2';

/** A rerank API of the Cohere v2 / Jina shape (POST {base}/rerank). */
export class RerankApiModel implements RerankModel {
  private readonly client: UpstreamClient;
  private readonly provider: string;

  constructor(client: UpstreamClient, provider: string) {
    this.client = client;
    this.provider = provider;
  }

  async rerank(request: RerankRequest, { signal }: ChatCallOptions): Promise<RerankResult> {
    const res = await syncRequest(this.client, { path: '/rerank', json: rerankBody(request), signal });
    return rerankResult(syncJson(res, this.provider, 'rerank'), request, this.provider);
  }
}

export function createRerankModel(ctx: AdapterContext): RerankModel {
  const client = new UpstreamClient({
    ...ctx.client,
    baseURL: ctx.baseURL ?? COHERE_BASE_URL,
    headers: ctx.apiKey ? { authorization: `Bearer ${ctx.apiKey}` } : {},
    fetch: ctx.fetch,
  });
  return new RerankApiModel(client, ctx.provider);
}
