/** What the Google adapter reads of Gemini's `generateContent` answers (whole, or each frame of a stream). */
import { Type, type Static } from 'typebox';
import { replySchema, type ReplyOf } from '../upstream-reply.ts';

/** A part of a candidate: text (a thought summary when `thought`), or a function call. */
const GeminiPart = Type.Object({
  text: Type.Optional(Type.String()),
  thought: Type.Optional(Type.Boolean()),
  functionCall: Type.Optional(Type.Object({ id: Type.Optional(Type.String()), name: Type.String(), args: Type.Optional(Type.Record(Type.String(), Type.Unknown())) })),
});

/** A `generateContent` answer; a stream frame holds only the new parts, and `error` when it failed. */
export const GeminiResponse = replySchema(Type.Object({
  candidates: Type.Optional(Type.Array(Type.Object({
    content: Type.Optional(Type.Object({ parts: Type.Optional(Type.Array(GeminiPart)) })),
    finishReason: Type.Optional(Type.String()),
  }))),
  promptFeedback: Type.Optional(Type.Object({ blockReason: Type.Optional(Type.String()) })),
  usageMetadata: Type.Optional(Type.Object({
    promptTokenCount: Type.Optional(Type.Number()),
    candidatesTokenCount: Type.Optional(Type.Number()),
    thoughtsTokenCount: Type.Optional(Type.Number()),
    cachedContentTokenCount: Type.Optional(Type.Number()),
    totalTokenCount: Type.Optional(Type.Number()),
  })),
  modelVersion: Type.Optional(Type.String()),
  responseId: Type.Optional(Type.String()),
  error: Type.Optional(Type.Object({ message: Type.Optional(Type.String()), status: Type.Optional(Type.String()) })),
}));

/** Gemini's usage. */
export type UsageMetadata = NonNullable<ReplyOf<typeof GeminiResponse>['usageMetadata']>;

/** A part of an answer's candidate. */
export type GeminiAnswerPart = Static<typeof GeminiPart>;
