/** What the Kling adapter reads of Kling's `{code, message, request_id, data}` replies. */
import { Type } from 'typebox';
import { OptionalNullable, replySchema } from '../upstream-reply.ts';

/** The envelope of every reply: code 0, or another code and Kling's message. */
export const KlingEnvelope = replySchema(Type.Object({ code: Type.Number(), message: Type.Optional(Type.String()) }));

/** A create reply. */
export const KlingCreated = replySchema(Type.Object({ data: Type.Object({ task_id: Type.String({ minLength: 1 }) }) }));

/** A task query reply; final_unit_deduction comes as a numeric string. */
export const KlingTask = replySchema(Type.Object({
  data: Type.Object({
    task_status: Type.String(),
    task_status_msg: Type.Optional(Type.String()),
    final_unit_deduction: Type.Optional(Type.Union([Type.String(), Type.Number()])),
    task_result: OptionalNullable(Type.Object({ videos: Type.Optional(Type.Array(Type.Object({ url: Type.String() }))) })),
  }),
}));
