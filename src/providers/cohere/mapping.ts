/**
 * Rerank in the Cohere v2 shape, which Jina's API also takes: `{model, query, documents, top_n}`
 * in, `results: [{index, relevance_score}]` out; usage from Cohere's `meta` or Jina's `usage`.
 */
import { ApiError } from '../../core/errors.ts';
import type { RerankRequest, RerankResult } from '../spec.ts';
import { readAnswer } from '../upstream-reply.ts';
import { RerankAnswer } from './reply-schemas.ts';

export function rerankBody(request: RerankRequest): Record<string, unknown> {
  return {
    model: request.model.defaultRealModelName,
    query: request.query,
    documents: request.documents,
    ...(request.topN !== undefined ? { top_n: request.topN } : {}),
  };
}

export function rerankResult(answer: unknown, request: RerankRequest, provider: string): RerankResult {
  const reply = readAnswer(RerankAnswer, answer, provider);
  const results = reply.results.map((item) => {
    if (item.index < 0 || item.index >= request.documents.length) throw new ApiError('upstream_error', `${provider} answered rerank with index ${item.index}, which is no sent document`);
    return { index: item.index, relevance_score: item.relevance_score };
  });
  results.sort((a, b) => b.relevance_score - a.relevance_score);
  const totalTokens = reply.meta?.tokens?.input_tokens ?? reply.usage?.total_tokens;
  const searchUnits = reply.meta?.billed_units?.search_units;
  return {
    results: results.slice(0, request.topN ?? results.length),
    usage: { ...(totalTokens !== undefined ? { total_tokens: totalTokens } : {}), ...(searchUnits !== undefined ? { search_units: searchUnits } : {}) },
  };
}
