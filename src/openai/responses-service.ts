/**
 * OpenAI's Responses API over the chat service: the input items and instructions become chat
 * messages after the conversation of previous_response_id, the answer becomes the response
 * object (or its events), and a stored response keeps its conversation for the next turn.
 */
import type { ChatService } from '../chat/chat-service.ts';
import type { ChatInputMessage } from '../core/chat-input.ts';
import type { ChatUsage } from '../providers/spec.ts';
import { ApiError } from '../core/errors.ts';
import type { OpenAiResponsesRepo } from '../storage/repos/openai-responses-repo.ts';
import { chatParams, inputMessages } from './responses-input.ts';
import { completionOutput, finishResponse, itemId, replyMessage, ResponseEventStream, startResponse, type ResponseEvent } from './responses-output.ts';
import type { ResponseObject, ResponsesRequest } from './responses-schemas.ts';

export type ResponsesOutcome =
  | { kind: 'response'; response: ResponseObject }
  /** The events in order; the iteration throws when the model fails midway, and `failed` is then the last event to send. */
  | { kind: 'stream'; events: AsyncIterable<ResponseEvent>; failed(code: string, message: string): ResponseEvent };

export class OpenAiResponsesService {
  constructor(private readonly deps: { chat: ChatService; store: OpenAiResponsesRepo }) {}

  /** Runs one request; `metered` is told the model's usage once it is known (before the last event). */
  async create(body: ResponsesRequest, ownerId: string, signal: AbortSignal, metered: (usage: ChatUsage) => void): Promise<ResponsesOutcome> {
    const history = body.previous_response_id ? await this.history(ownerId, body.previous_response_id) : [];
    const added = inputMessages(body.input);
    const messages: ChatInputMessage[] = [...(body.instructions ? [{ role: 'system' as const, content: body.instructions }] : []), ...history, ...added];
    const stream = body.stream === true;
    const outcome = await this.deps.chat.start({ model: body.model, messages, stream, ...chatParams(body) }, ownerId, signal);
    const started = startResponse(itemId('resp'), body, body.model);
    const keep = async (response: ResponseObject) => {
      if (body.store !== false) await this.deps.store.insert(ownerId, response.id, { messages: [...history, ...added, replyMessage(response.output)], response: response as unknown as Record<string, unknown> });
    };

    if (outcome.kind === 'completion') {
      const { completion } = outcome;
      if (completion.usage) metered(completion.usage);
      const response = finishResponse(started, completionOutput(completion), completion.choices[0]?.finish_reason ?? null, completion.usage);
      await keep(response);
      return { kind: 'response', response };
    }
    const { chunks } = outcome;
    const events = new ResponseEventStream(started);
    async function* all(): AsyncGenerator<ResponseEvent> {
      yield* events.start();
      for await (const chunk of chunks) {
        if (chunk.usage) metered(chunk.usage);
        yield* events.chunk(chunk);
      }
      const end = events.end();
      await keep(end.response);
      yield* end.events;
    }
    return { kind: 'stream', events: all(), failed: (code, message) => events.fail(code, message) };
  }

  /** The conversation a stored response of the caller ends. */
  private async history(ownerId: string, id: string): Promise<ChatInputMessage[]> {
    const stored = await this.deps.store.find(ownerId, id);
    if (!stored) throw new ApiError('previous_response_not_found', `Previous response with id '${id}' not found.`, 'previous_response_id');
    return stored.messages;
  }

  /** GET /responses/{id}: the caller's stored response. */
  async find(ownerId: string, id: string): Promise<ResponseObject> {
    const stored = await this.deps.store.find(ownerId, id);
    if (!stored) throw new ApiError('previous_response_not_found', `Response with id '${id}' not found.`, 'response_id');
    return stored.response as unknown as ResponseObject;
  }
}
