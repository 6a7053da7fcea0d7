import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { EmbeddingsBody } from '../../embeddings/schemas.ts';
import { RerankBody } from '../../rerank/schemas.ts';
import { clientGoneSignal } from '../client-gone.ts';
import type { AppServices } from '../services.ts';

const security = [{ bearer: [] }];

/** POST /embeddings (OpenAI's embeddings API), registered under /v1 and /openai/v1. */
export const embeddingRoutes = (services: AppServices): FastifyPluginAsyncTypebox => async (app) => {
  app.post('/embeddings', {
    schema: {
      tags: ['embeddings'],
      summary: 'Embed texts (OpenAI\'s embeddings API)',
      description: '`{object: "list", data: [{object: "embedding", index, embedding}], model, usage}`; `encoding_format: "base64"` sends each vector as base64 of little-endian float32.',
      security,
      body: EmbeddingsBody,
    },
  }, async (request, reply) => {
    const answer = await services.embeddings.embed(request.body, clientGoneSignal(reply));
    request.ctx.recordUsage({ ...answer.usage, completion_tokens: 0 });
    return answer;
  });
};

/** POST /v1/rerank: documents scored against a query (the Cohere v2 / Jina shape). */
export const rerankRoutes = (services: AppServices): FastifyPluginAsyncTypebox => async (app) => {
  app.post('/v1/rerank', {
    schema: {
      tags: ['embeddings'],
      summary: 'Rerank documents by relevance to a query',
      description: '`{model, results: [{index, relevance_score, document?}], usage}`, best first, cut to top_n.',
      security,
      body: RerankBody,
    },
  }, async (request, reply) => services.rerank.rerank(request.body, clientGoneSignal(reply)));
};
