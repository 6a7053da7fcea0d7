/** What the volcengine adapter reads of Ark's replies (Seedance video tasks, Seedream images). */
import { Type } from 'typebox';
import { OptionalNullable, replySchema } from '../upstream-reply.ts';

/** Ark's `{code, message}` of an error. */
const ArkErrorObject = Type.Object({ code: OptionalNullable(Type.String()), message: OptionalNullable(Type.String()) });

/** Token usage: Ark counts the images or the video as output tokens. */
const ArkUsage = OptionalNullable(Type.Object({ output_tokens: OptionalNullable(Type.Number()), completion_tokens: OptionalNullable(Type.Number()), total_tokens: OptionalNullable(Type.Number()) }));

/** A video task create reply. */
export const ArkCreated = replySchema(Type.Object({ id: Type.String({ minLength: 1 }) }));

/** A GET /contents/generations/tasks/{id} reply. */
export const ArkTask = replySchema(Type.Object({
  status: Type.String(),
  error: OptionalNullable(ArkErrorObject),
  content: OptionalNullable(Type.Object({ video_url: OptionalNullable(Type.String()) })),
  usage: ArkUsage,
  seed: OptionalNullable(Type.Number()),
}));

/** An images reply: each image's URL, or the error of an image of the group that was not made. */
export const SeedreamImages = replySchema(Type.Object({
  data: OptionalNullable(Type.Array(Type.Object({ url: OptionalNullable(Type.String()), error: OptionalNullable(ArkErrorObject) }))),
  error: OptionalNullable(ArkErrorObject),
  usage: ArkUsage,
}));

/** An error body `{error: {code, message}}`. */
export const ArkError = replySchema(Type.Object({ error: Type.Object({ code: Type.Optional(Type.Unknown()), message: Type.String() }) }));
