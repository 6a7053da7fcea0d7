/** What the fal adapter reads of fal's queue replies. */
import { Type } from 'typebox';
import { OptionalNullable, replySchema, type ReplyOf } from '../upstream-reply.ts';

/** A queue submit reply: the request id and the URLs to follow. */
export const FalSubmitted = replySchema(Type.Object({ request_id: Type.String(), status_url: Type.String(), response_url: Type.String() }));

/** A status reply; a COMPLETED request that failed carries `error` (shown as it came) and `error_type`. */
export const FalStatus = replySchema(Type.Object({
  status: Type.String(),
  queue_position: OptionalNullable(Type.Number()),
  error: Type.Optional(Type.Unknown()),
  error_type: OptionalNullable(Type.String()),
}));

/** A result file: fal's File object, or its URL alone. */
const FalFile = Type.Union([Type.String(), Type.Object({ url: Type.String(), file_name: OptionalNullable(Type.String()) })]);

/** A Tripo result: the model, the base and PBR models (in model_urls or at the top level), the rendered preview. */
export const FalResult = replySchema(Type.Object({
  model_mesh: FalFile,
  model_urls: OptionalNullable(Type.Object({ base_model: OptionalNullable(FalFile), pbr_model: OptionalNullable(FalFile) })),
  base_model: OptionalNullable(FalFile),
  pbr_model: OptionalNullable(FalFile),
  rendered_image: OptionalNullable(FalFile),
}));

/** An error body with `detail` as text. */
export const FalErrorText = replySchema(Type.Object({ detail: Type.String() }));

/** An error body with `detail` as validation items. */
export const FalValidationError = replySchema(Type.Object({
  detail: Type.Array(Type.Object({ loc: Type.Optional(Type.Array(Type.Unknown())), msg: Type.Optional(Type.Unknown()) })),
}));

/** An error body with `error` as text. */
export const FalErrorString = replySchema(Type.Object({ error: Type.String() }));

/** A result file as the reply holds it. */
export type FalFile = ReplyOf<typeof FalResult>['model_mesh'];
