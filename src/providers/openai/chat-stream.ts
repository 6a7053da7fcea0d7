import type { Readable } from 'node:stream';
import { ApiError } from '../../core/errors.ts';
import { streamFrame, translatedChunks, type StreamOptions, type StreamTranslator } from '../chat-sse.ts';
import { keepable, keptJson } from '../kept-json.ts';
import type { ChatChunk } from '../spec.ts';
import { readAnswer } from '../upstream-reply.ts';
import { OpenAiChat, OpenAiError, OpenAiErrorText, OpenAiStreamFailure } from './reply-schemas.ts';

/** OpenAI's stream: each frame is a chunk (kept as it came, see keptJson), `[DONE]` ends it, `{"error": …}` is a failure. */
class OpenAiStream implements StreamTranslator {
  finished = false;

  private readonly provider: string;

  constructor(provider: string) {
    this.provider = provider;
  }

  push(data: string): ChatChunk[] {
    if (data === '[DONE]') {
      this.finished = true;
      return [];
    }
    // An object naming choices and no error anywhere is taken for a chunk as it is, and passed on unparsed.
    if (keepable(data)) return [keptJson<ChatChunk>(data)];
    const frame = streamFrame(data, this.provider);
    if (OpenAiStreamFailure.Check(frame)) {
      const message = OpenAiErrorText.Check(frame) ? frame.error : OpenAiError.Check(frame) ? frame.error.message : JSON.stringify(frame.error);
      throw new ApiError('upstream_error', `${this.provider} failed in the middle of the stream: ${message}`);
    }
    return [readAnswer(OpenAiChat, frame, this.provider) as ChatChunk];
  }

  end(): ChatChunk[] {
    if (!this.finished) throw new ApiError('upstream_error', `${this.provider} ended the stream without [DONE]`);
    return [];
  }
}

/** The chunks of an OpenAI chat stream (see translatedChunks). */
export function chatChunks(body: Readable, opts: StreamOptions): AsyncIterableIterator<ChatChunk> {
  return translatedChunks(body, new OpenAiStream(opts.provider), opts);
}
