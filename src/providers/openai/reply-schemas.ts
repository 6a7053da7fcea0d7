/** What the OpenAI-compatible adapters read of the replies: images, chat, embeddings, transcriptions, errors. */
import { Type } from 'typebox';
import { OptionalNullable, replySchema } from '../upstream-reply.ts';

/** An images reply: each image inline or by URL, the prompt as the model revised it, token usage. */
export const OpenAiImages = replySchema(Type.Object({
  data: Type.Array(Type.Object({ b64_json: OptionalNullable(Type.String()), url: OptionalNullable(Type.String()), revised_prompt: OptionalNullable(Type.String()) })),
  usage: OptionalNullable(Type.Object({
    total_tokens: OptionalNullable(Type.Number()),
    input_tokens: OptionalNullable(Type.Number()),
    output_tokens: OptionalNullable(Type.Number()),
  })),
}));

/** An error body `{error: {message, param}}` (Anthropic's and Gemini's have this shape too). */
export const OpenAiError = replySchema(Type.Object({ error: Type.Object({ message: Type.String(), param: OptionalNullable(Type.String()) }) }));

/** An error body `{error: "…"}`. */
export const OpenAiErrorText = replySchema(Type.Object({ error: Type.String() }));

/** An error body `{message: "…"}`. */
export const OpenAiMessage = replySchema(Type.Object({ message: Type.String() }));

/** A chat completion or chunk: passed on as it came, so only its choices are checked. */
export const OpenAiChat = replySchema(Type.Object({ choices: Type.Array(Type.Unknown()) }));

/** A stream frame that reports a failure (`{"error": …}`, a text or an object). */
export const OpenAiStreamFailure = replySchema(Type.Object({ error: Type.Unknown() }));

/** An embeddings answer; `embedding` is a list of numbers, or base64 of float32 when a server sends it so anyway. */
export const OpenAiEmbeddings = replySchema(Type.Object({
  data: Type.Optional(Type.Array(Type.Object({ index: Type.Optional(Type.Number()), embedding: Type.Optional(Type.Union([Type.Array(Type.Number()), Type.String()])) }))),
  usage: Type.Optional(Type.Object({ prompt_tokens: Type.Optional(Type.Number()) })),
}));

/** A transcription answer (`json`, or `verbose_json` where a server sends more). */
export const OpenAiTranscription = replySchema(Type.Object({
  text: Type.Optional(Type.String()),
  language: Type.Optional(Type.String()),
  duration: Type.Optional(Type.Number()),
  segments: Type.Optional(Type.Array(Type.Object({ start: Type.Optional(Type.Number()), end: Type.Optional(Type.Number()), text: Type.Optional(Type.String()) }))),
  usage: Type.Optional(Type.Union([
    Type.Object({ type: Type.Literal('tokens'), input_tokens: Type.Number(), output_tokens: Type.Number(), total_tokens: Type.Number() }),
    Type.Object({ type: Type.Literal('duration'), seconds: Type.Number() }),
  ])),
}));

/** The usage of a Responses API response object (input_tokens counts the cached ones too). */
const ResponsesUsage = Type.Object({
  input_tokens: Type.Number(),
  output_tokens: Type.Number(),
  total_tokens: Type.Optional(Type.Number()),
  input_tokens_details: OptionalNullable(Type.Object({ cached_tokens: OptionalNullable(Type.Number()) })),
});

/** A Responses API response object: passed on as it came, so only its usage is read. */
export const OpenAiResponse = replySchema(Type.Object({ usage: OptionalNullable(ResponsesUsage) }));

/** A Responses API stream event: its type, and the response object of the events that carry one. */
export const OpenAiResponsesEvent = replySchema(Type.Object({
  type: Type.String(),
  response: Type.Optional(Type.Object({ usage: OptionalNullable(ResponsesUsage) })),
}));
