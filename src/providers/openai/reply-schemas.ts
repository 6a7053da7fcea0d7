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

/** An error body `{error: {message, param}}`. */
export const OpenAiError = replySchema(Type.Object({ error: Type.Object({ message: Type.String(), param: OptionalNullable(Type.Unknown()) }) }));

/** An error body `{error: "…"}`. */
export const OpenAiErrorText = replySchema(Type.Object({ error: Type.String() }));

/** An error body `{message: "…"}`. */
export const OpenAiMessage = replySchema(Type.Object({ message: Type.String() }));
