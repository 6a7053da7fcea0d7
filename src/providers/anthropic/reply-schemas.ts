/** What the Anthropic adapter reads of the Messages API's answers and stream events. */
import { Type } from 'typebox';
import { OptionalNullable, replySchema, type ReplyOf } from '../upstream-reply.ts';

/** Usage; `input_tokens` counts only uncached input. */
const Usage = Type.Object({
  input_tokens: Type.Optional(Type.Number()),
  output_tokens: Type.Optional(Type.Number()),
  cache_creation_input_tokens: OptionalNullable(Type.Number()),
  cache_read_input_tokens: OptionalNullable(Type.Number()),
});

/** A whole answer; its content blocks are read by type (AnthropicBlocks), other types passed over. */
export const AnthropicMessage = replySchema(Type.Object({
  id: Type.String(),
  type: Type.Literal('message'),
  model: Type.String(),
  content: Type.Array(Type.Object({ type: Type.String() })),
  stop_reason: OptionalNullable(Type.String()),
  usage: Type.Optional(Usage),
}));

/** The content blocks of an answer that are read, by type. */
export const AnthropicBlocks = {
  text: replySchema(Type.Object({ type: Type.Literal('text'), text: Type.String() })),
  tool_use: replySchema(Type.Object({ type: Type.Literal('tool_use'), id: Type.String(), name: Type.String(), input: Type.Optional(Type.Unknown()) })),
  /** Sent back unchanged with its turn's tool calls (its signature is checked). */
  thinking: replySchema(Type.Object({ type: Type.Literal('thinking'), thinking: Type.String(), signature: Type.String() })),
  redacted_thinking: replySchema(Type.Object({ type: Type.Literal('redacted_thinking'), data: Type.String() })),
};

/** A stream event: its type says how the rest is read (AnthropicEvents); other types are passed over. */
export const AnthropicEvent = replySchema(Type.Object({ type: Type.String() }));

/** The stream events that are read, by type. */
export const AnthropicEvents = {
  message_start: replySchema(Type.Object({ message: Type.Object({ id: Type.String(), model: Type.String(), usage: Type.Optional(Usage) }) })),
  content_block_start: replySchema(Type.Object({
    index: Type.Number(),
    content_block: Type.Object({
      type: Type.String(),
      id: Type.Optional(Type.String()),
      name: Type.Optional(Type.String()),
      text: Type.Optional(Type.String()),
      thinking: Type.Optional(Type.String()),
      signature: Type.Optional(Type.String()),
      data: Type.Optional(Type.String()),
    }),
  })),
  content_block_delta: replySchema(Type.Object({
    index: Type.Number(),
    delta: Type.Object({
      type: Type.String(),
      text: Type.Optional(Type.String()),
      partial_json: Type.Optional(Type.String()),
      thinking: Type.Optional(Type.String()),
      signature: Type.Optional(Type.String()),
    }),
  })),
  content_block_stop: replySchema(Type.Object({ index: Type.Number() })),
  message_delta: replySchema(Type.Object({ delta: Type.Object({ stop_reason: OptionalNullable(Type.String()) }), usage: Type.Optional(Usage) })),
  error: replySchema(Type.Object({ error: Type.Optional(Type.Object({ type: Type.Optional(Type.String()), message: Type.Optional(Type.String()) })) })),
};

/** The answer of `POST /messages/count_tokens`. */
export const AnthropicTokenCount = replySchema(Type.Object({ input_tokens: Type.Number() }));

/** Anthropic's usage. */
export type AnthropicUsage = NonNullable<ReplyOf<typeof AnthropicMessage>['usage']>;
