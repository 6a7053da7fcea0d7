import { randomUUID } from 'node:crypto';
import { setTimeout as delay } from 'node:timers/promises';
import type { ChatCallOptions, ChatChunk, ChatCompletion, ChatModel, ChatRequest } from '../../spec.ts';
import { localReply, type LocalReply } from './local-reply.ts';

/** Words per streamed content chunk. */
const WORDS_PER_CHUNK = 3;
/** Characters per streamed piece of tool-call arguments. */
const ARGUMENT_PIECE_CHARS = 16;

function completionId(): string {
  return `chatcmpl-${randomUUID().replaceAll('-', '')}`;
}

/** The text in pieces of a few words, each with the spacing before it, so the pieces join back exactly. */
function pieces(text: string): string[] {
  const words = text.match(/\s*\S+/g) ?? [text];
  const out: string[] = [];
  for (let i = 0; i < words.length; i += WORDS_PER_CHUNK) out.push(words.slice(i, i + WORDS_PER_CHUNK).join(''));
  return out;
}

export interface LocalChatModelOptions {
  /** A stream's chunks are spread over at least this long (LOCAL_ENGINE_MIN_DURATION_MS), to watch it and try cancel. */
  minDurationMs: number;
}

/**
 * The built-in offline chat model: deterministic answers derived from the conversation (see
 * localReply), streamed in several chunks, with token usage counted.
 */
export class LocalChatModel implements ChatModel {
  private readonly opts: LocalChatModelOptions;

  constructor(opts: LocalChatModelOptions) {
    this.opts = opts;
  }

  async complete(request: ChatRequest, { signal }: ChatCallOptions): Promise<ChatCompletion> {
    signal.throwIfAborted();
    const reply = localReply(request);
    return {
      id: completionId(),
      object: 'chat.completion',
      created: Math.floor(Date.now() / 1000),
      model: request.model.alias,
      choices: [{
        index: 0,
        message: { role: 'assistant', content: reply.content, ...(reply.toolCalls.length > 0 ? { tool_calls: reply.toolCalls } : {}), refusal: null },
        finish_reason: reply.finishReason,
        // As vLLM reports it: which stop sequence ended the text.
        ...(reply.stopSequence !== undefined ? { stop_reason: reply.stopSequence } : {}),
        logprobs: null,
      }],
      usage: reply.usage,
    };
  }

  async stream(request: ChatRequest, { signal }: ChatCallOptions): Promise<AsyncIterable<ChatChunk>> {
    signal.throwIfAborted();
    return this.paced(this.chunks(localReply(request), request.model.alias), signal);
  }

  /** The chunks in order, evenly spaced over the minimum duration; an abort stops the stream between two chunks. */
  private async *paced(chunks: ChatChunk[], signal: AbortSignal): AsyncGenerator<ChatChunk> {
    const gapMs = chunks.length > 1 ? this.opts.minDurationMs / (chunks.length - 1) : 0;
    for (const [index, chunk] of chunks.entries()) {
      // An abort cuts the wait short; the stream then fails with the abort's reason, not the timer's AbortError.
      if (index > 0 && gapMs > 0) await delay(gapMs, undefined, { signal }).catch(() => undefined);
      signal.throwIfAborted();
      yield chunk;
    }
  }

  /** The reply as stream chunks: the role, the text in a few words a chunk (or the tool calls in pieces), the finish, the usage. */
  private chunks(reply: LocalReply, model: string): ChatChunk[] {
    const id = completionId();
    const created = Math.floor(Date.now() / 1000);
    const chunk = (delta: ChatChunk['choices'][number]['delta'], finishReason: LocalReply['finishReason'] | null = null): ChatChunk => ({
      id, object: 'chat.completion.chunk', created, model, choices: [{ index: 0, delta, finish_reason: finishReason, logprobs: null }], usage: null,
    });
    const chunks: ChatChunk[] = [];
    if (reply.toolCalls.length > 0) {
      chunks.push(chunk({ role: 'assistant', content: null }));
      for (const [index, call] of reply.toolCalls.entries()) {
        chunks.push(chunk({ tool_calls: [{ index, id: call.id, type: 'function', function: { name: call.function.name, arguments: '' } }] }));
        for (let at = 0; at < call.function.arguments.length; at += ARGUMENT_PIECE_CHARS) {
          chunks.push(chunk({ tool_calls: [{ index, function: { arguments: call.function.arguments.slice(at, at + ARGUMENT_PIECE_CHARS) } }] }));
        }
      }
    } else {
      chunks.push(chunk({ role: 'assistant', content: '' }));
      for (const piece of pieces(reply.content ?? '')) chunks.push(chunk({ content: piece }));
    }
    const finish = chunk({}, reply.finishReason);
    if (reply.stopSequence !== undefined) finish.choices[0]!.stop_reason = reply.stopSequence;
    chunks.push(finish);
    chunks.push({ id, object: 'chat.completion.chunk', created, model, choices: [], usage: reply.usage });
    return chunks;
  }
}
