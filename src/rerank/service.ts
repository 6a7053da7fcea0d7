/** Rerank: the model checked against the catalog (text_rerank, its limits), the documents scored by its engine, best first. */
import type { LiveModel } from '../catalog/catalog.ts';
import type { CapabilityName } from '../catalog/schema.ts';
import { ApiError } from '../core/errors.ts';
import type { SyncModelRegistry } from '../providers/registry.ts';
import type { RerankModel } from '../providers/spec.ts';
import { DEFAULT_MAX_DOCUMENTS, type RerankBody, type RerankResponse } from './schemas.ts';

export interface RerankServiceDeps {
  models: SyncModelRegistry<RerankModel>;
  resolveModel(alias: string, capabilities: readonly CapabilityName[]): LiveModel;
}

export class RerankService {
  private readonly deps: RerankServiceDeps;

  constructor(deps: RerankServiceDeps) {
    this.deps = deps;
  }

  async rerank(body: RerankBody, signal: AbortSignal): Promise<RerankResponse> {
    const model = this.deps.resolveModel(body.model, ['text_rerank']);
    const capability = model.capabilities.text_rerank;
    const maxDocuments = capability?.maxDocuments ?? DEFAULT_MAX_DOCUMENTS;
    if (body.documents.length > maxDocuments) throw new ApiError('invalid_parameter', `model ${model.alias} takes at most ${maxDocuments} documents`, 'documents');
    if (body.top_n !== undefined && capability?.supportTopN === false) throw new ApiError('unsupported_parameter', `model ${model.alias} has no top_n`, 'top_n');
    const documents = body.documents.map((document) => (typeof document === 'string' ? document : document.text));
    const result = await this.deps.models.modelFor(model).rerank({ model, query: body.query, documents, topN: body.top_n }, { signal });
    return {
      model: model.alias,
      results: result.results.map((item) => (body.return_documents ? { ...item, document: { text: documents[item.index]! } } : item)),
      usage: result.usage,
    };
  }
}
