/** What the volc-human adapter reads of the visual API's `{code, message, data, request_id, …}` replies. */
import { Type } from 'typebox';
import { OptionalNullable, replySchema, type ReplyOf } from '../upstream-reply.ts';

/** Every reply: code 10000, a busy code to ask again, or a refusal with its message. */
export const VisualEnvelope = replySchema(Type.Object({ code: Type.Number(), message: OptionalNullable(Type.String()) }));

/** A CVSubmitTask reply. */
export const VisualSubmitted = replySchema(Type.Object({ data: Type.Object({ task_id: Type.String({ minLength: 1 }) }) }));

/** A CVGetResult reply: the status, the video URL where some products put it, and resp_data (read with VisualRespData). */
export const VisualResult = replySchema(Type.Object({
  data: Type.Object({
    status: Type.String(),
    resp_data: Type.Optional(Type.Unknown()),
    url: OptionalNullable(Type.String()),
    video_url: OptionalNullable(Type.String()),
  }),
}));

/** resp_data of a CVGetResult reply, once parsed: progress, the task's own result code, the avatar or the video. */
export const VisualRespData = replySchema(Type.Object({
  progress: OptionalNullable(Type.Number()),
  code: Type.Optional(Type.Number()),
  msg: OptionalNullable(Type.String()),
  resource_id: OptionalNullable(Type.String()),
  vid: OptionalNullable(Type.Object({ url: OptionalNullable(Type.String()) })),
}));

/** `data` of a CVGetResult reply. */
export type ResultData = ReplyOf<typeof VisualResult>['data'];
/** resp_data of a CVGetResult reply, parsed. */
export type RespData = ReplyOf<typeof VisualRespData>;
