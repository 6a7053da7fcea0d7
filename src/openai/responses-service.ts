/**
 * OpenAI's Responses API over the chat service. A model whose upstream serves the Responses API
 * gets the request as it came, and its answer or events go back unchanged; for any other, the
 * input items and instructions become chat messages after the conversation of
 * previous_response_id, the answer becomes the response object (or its events), and a stored
 * response keeps its conversation for the next turn.
 */
import type { ChatService } from '../chat/chat-service.ts';
import type { ChatInputMessage } from '../core/chat-input.ts';
import { ApiError } from '../core/errors.ts';
import type { ChatUsage, ServedRoute, UpstreamResponsesEvent } from '../providers/spec.ts';
import type { OpenAiResponsesRepo } from '../storage/repos/openai-responses-repo.ts';
import { chatParams, inputMessages } from './responses-input.ts';
import { completionOutput, finishResponse, itemId, replyMessage, ResponseEventStream, startResponse, type ResponseEvent } from './responses-output.ts';
import type { ResponseObject, ResponsesRequest } from './responses-schemas.ts';

export type ResponsesOutcome = (
  | { kind: 'response'; response: ResponseObject }
  /** The events in order; the iteration throws when the model fails midway, and `failed` is then the last event to send. */
  | { kind: 'stream'; events: AsyncIterable<ResponseEvent>; failed(code: string, message: string): ResponseEvent }
  /** The upstream's response object, as its JSON text came. */
  | { kind: 'upstream-response'; text: string; usage: ChatUsage | undefined }
  /** The upstream's events as they came; the iteration throws when the upstream fails midway. */
  | { kind: 'upstream-stream'; events: AsyncIterable<UpstreamResponsesEvent> }
) & {
  /** The model, provider and channel that took the call. */
  route?: ServedRoute;
  /** What the translation for a chat model dropped (tools, items), one line each. */
  warnings: string[];
};

export class OpenAiResponsesService {
  constructor(private readonly deps: { chat: ChatService; store: OpenAiResponsesRepo }) {}

  /** Runs one request; `metered` is told a chat model's usage once it is known (before the last event). */
  async create(body: ResponsesRequest, ownerId: string, signal: AbortSignal, metered: (usage: ChatUsage) => void): Promise<ResponsesOutcome> {
    const warnings: string[] = [];
    const { params, declared } = chatParams(body, warnings);
    const stream = body.stream === true;
    let history: ChatInputMessage[] = [];
    let added: ChatInputMessage[] = [];
    // Read only for a chat model: an upstream that serves the Responses API keeps its own conversations.
    const messages = async (): Promise<ChatInputMessage[]> => {
      history = body.previous_response_id ? await this.history(ownerId, body.previous_response_id) : [];
      added = inputMessages(body.input, warnings);
      return [...(body.instructions ? [{ role: 'system' as const, content: body.instructions }] : []), ...history, ...added];
    };
    const outcome = await this.deps.chat.respond({ model: body.model, body, stream, params, messages }, ownerId, signal);
    const route = outcome.route ? { route: outcome.route } : {};

    if (outcome.kind === 'upstream') {
      const { answer } = outcome;
      if (answer.kind === 'stream') return { kind: 'upstream-stream', events: answer.events, warnings: [], ...route };
      return { kind: 'upstream-response', text: answer.text, usage: answer.usage, warnings: [], ...route };
    }

    const started = startResponse(itemId('resp'), body, body.model);
    const keep = async (response: ResponseObject) => {
      if (body.store !== false) await this.deps.store.insert(ownerId, response.id, { messages: [...history, ...added, replyMessage(response.output)], response: response as unknown as Record<string, unknown> });
    };
    if (outcome.kind === 'completion') {
      const { completion } = outcome;
      if (completion.usage) metered(completion.usage);
      const response = finishResponse(started, completionOutput(completion, declared), completion.choices[0]?.finish_reason ?? null, completion.usage);
      await keep(response);
      return { kind: 'response', response, warnings, ...route };
    }
    const { chunks } = outcome;
    const events = new ResponseEventStream(started, declared);
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
    return { kind: 'stream', events: all(), failed: (code, message) => events.fail(code, message), warnings, ...route };
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
