import type { AdapterContext } from '../adapter-support.ts';
import type { ChatCallOptions, Transcription, TranscriptionModel, TranscriptionRequest } from '../spec.ts';
import { syncJson, syncRequest } from '../sync-upstream.ts';
import type { UpstreamClient } from '../upstream-client.ts';
import { readAnswer } from '../upstream-reply.ts';
import { openAiCompatibleClient } from './embedding-model.ts';
import { OpenAiTranscription } from './reply-schemas.ts';

/** The multipart form sent upstream: the file, the upstream's model name, the caller's hints, `json` answers. */
export function transcriptionForm(request: TranscriptionRequest): FormData {
  const form = new FormData();
  form.set('file', new Blob([new Uint8Array(request.file.data)], { type: request.file.mimeType }), request.file.fileName);
  form.set('model', request.model.defaultRealModelName);
  if (request.language !== undefined) form.set('language', request.language);
  if (request.prompt !== undefined) form.set('prompt', request.prompt);
  if (request.temperature !== undefined) form.set('temperature', String(request.temperature));
  form.set('response_format', 'json');
  return form;
}

/** An OpenAI-compatible transcription API (POST {base}/audio/transcriptions). */
export class OpenAiTranscriptionModel implements TranscriptionModel {
  private readonly client: UpstreamClient;
  private readonly provider: string;

  constructor(client: UpstreamClient, provider: string) {
    this.client = client;
    this.provider = provider;
  }

  async transcribe(request: TranscriptionRequest, { signal }: ChatCallOptions): Promise<Transcription> {
    const res = await syncRequest(this.client, { path: '/audio/transcriptions', body: transcriptionForm(request), signal });
    const reply = readAnswer(OpenAiTranscription, syncJson(res, this.provider, 'transcriptions'), this.provider);
    const segments = reply.segments?.map((s) => ({ start: s.start ?? 0, end: s.end ?? 0, text: s.text ?? '' }));
    return {
      text: reply.text ?? '',
      language: reply.language ?? request.language ?? null,
      duration: reply.duration ?? segments?.at(-1)?.end ?? 0,
      ...(segments ? { segments } : {}),
      ...(reply.usage ? { usage: reply.usage } : {}),
    };
  }
}

export function createOpenAiTranscriptionModel(ctx: AdapterContext): TranscriptionModel {
  return new OpenAiTranscriptionModel(openAiCompatibleClient(ctx), ctx.provider);
}
