import { ReplyingUpstream, type RecordedRequest, type Reply } from './recording-upstream.ts';

/**
 * An OpenAI-compatible embeddings and transcription server (OpenAI's answers: embeddings as
 * float lists, transcription `json`) and a rerank server of the Cohere v2 shape (Jina's usage
 * with `shape: "jina"`).
 */
export class FakeSyncModelsUpstream extends ReplyingUpstream {
  private readonly shape: 'cohere' | 'jina';

  constructor(shape: 'cohere' | 'jina' = 'cohere') {
    super();
    this.shape = shape;
  }

  protected route(req: RecordedRequest): Reply {
    const body = req.json as Record<string, unknown> | undefined;
    if (req.path === '/embeddings') {
      const input = body!.input as string[];
      const dimensions = (body!.dimensions as number | undefined) ?? 4;
      return {
        status: 200,
        body: {
          object: 'list',
          // Reversed, as a server may answer out of order; index says which input each is.
          data: input.map((_, index) => ({ object: 'embedding', index, embedding: Array.from({ length: dimensions }, (__, d) => index + d / 10) })).reverse(),
          model: body!.model,
          usage: { prompt_tokens: 7, total_tokens: 7 },
        },
      };
    }
    if (req.path === '/audio/transcriptions') {
      return { status: 200, body: { text: 'hello from upstream', usage: { type: 'duration', seconds: 2 } } };
    }
    if (req.path === '/rerank') {
      const documents = body!.documents as string[];
      const results = documents.map((_, index) => ({ index, relevance_score: (index + 1) / 10 }));
      return {
        status: 200,
        body: this.shape === 'cohere'
          ? { id: 'rr-1', results, meta: { api_version: { version: '2' }, billed_units: { search_units: 1 }, tokens: { input_tokens: 42 } } }
          : { model: body!.model, results, usage: { total_tokens: 42 } },
      };
    }
    return { status: 404, body: { error: { message: `no route ${req.path}` } } };
  }
}
