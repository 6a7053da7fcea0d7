/** What the BFL adapter reads of Black Forest Labs' replies. */
import { Type } from 'typebox';
import { OptionalNullable, replySchema } from '../upstream-reply.ts';

/** A submit reply: the request id, the URL to poll (on the cluster that took it), the credits it costs. */
export const BflSubmitted = replySchema(Type.Object({
  id: Type.String(),
  polling_url: Type.String({ pattern: '^https?://' }),
  cost: OptionalNullable(Type.Number()),
}));

/** A get_result reply (`ResultResponse`); `details` is shown as it came. */
export const BflResult = replySchema(Type.Object({
  status: Type.String(),
  result: OptionalNullable(Type.Object({ sample: OptionalNullable(Type.String()), seed: OptionalNullable(Type.Number()) })),
  progress: OptionalNullable(Type.Number()),
  details: Type.Optional(Type.Unknown()),
}));

/** A FastAPI error body with `detail` as text. */
export const BflErrorText = replySchema(Type.Object({ detail: Type.String() }));

/** A FastAPI error body with `detail` as validation items. */
export const BflValidationError = replySchema(Type.Object({
  detail: Type.Array(Type.Object({ loc: Type.Optional(Type.Array(Type.Union([Type.String(), Type.Number()]))), msg: Type.Optional(Type.String()) })),
}));
