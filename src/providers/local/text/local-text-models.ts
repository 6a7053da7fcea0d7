import type { ChatCallOptions, EmbeddingModel, EmbeddingRequest, EmbeddingResult, RerankModel, RerankRequest, RerankResult } from '../../spec.ts';
import { embedText } from './embed-text.ts';
import { rerankDocuments } from './rerank-documents.ts';
import { countTextTokens } from './text-features.ts';

/** Vector length when neither the request nor the catalog names one (OpenAI's text-embedding-3-small). */
const DEFAULT_DIMENSIONS = 1536;

/** The built-in offline embeddings: hashed word and trigram features (see embedText). */
export class LocalEmbeddingModel implements EmbeddingModel {
  async embed(request: EmbeddingRequest, { signal }: ChatCallOptions): Promise<EmbeddingResult> {
    signal.throwIfAborted();
    const dimensions = request.dimensions ?? request.model.capabilities.text_embedding?.dimensions?.[0] ?? DEFAULT_DIMENSIONS;
    return {
      vectors: request.input.map((text) => embedText(text, dimensions)),
      promptTokens: request.input.reduce((sum, text) => sum + countTextTokens(text), 0),
    };
  }
}

/** The built-in offline reranker: lexical overlap of query and documents (see rerankDocuments). */
export class LocalRerankModel implements RerankModel {
  async rerank(request: RerankRequest, { signal }: ChatCallOptions): Promise<RerankResult> {
    signal.throwIfAborted();
    const scores = rerankDocuments(request.query, request.documents);
    const results = scores
      .map((relevance_score, index) => ({ index, relevance_score }))
      .sort((a, b) => b.relevance_score - a.relevance_score || a.index - b.index)
      .slice(0, request.topN ?? scores.length);
    const tokens = countTextTokens(request.query) * request.documents.length + request.documents.reduce((sum, d) => sum + countTextTokens(d), 0);
    return { results, usage: { total_tokens: tokens, search_units: 1 } };
  }
}
