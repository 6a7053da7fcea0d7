/** What the Suno adapter reads of the `{code, msg, data}` replies. */
import { Type } from 'typebox';
import { OptionalNullable, replySchema, type ReplyOf } from '../upstream-reply.ts';

/** Every reply: code 200, or another code and the upstream's `msg`. */
export const SunoEnvelope = replySchema(Type.Object({ code: Type.Number(), msg: OptionalNullable(Type.String()) }));

/** A generate reply. */
export const SunoSubmitted = replySchema(Type.Object({ data: Type.Object({ taskId: Type.String({ minLength: 1 }) }) }));

/** A track of a record: its audio URL stays empty until the track is ready. */
const SunoTrackReply = Type.Object({
  id: Type.String(),
  audioUrl: OptionalNullable(Type.String()),
  imageUrl: OptionalNullable(Type.String()),
  title: OptionalNullable(Type.String()),
  tags: OptionalNullable(Type.String()),
  duration: OptionalNullable(Type.Number()),
  modelName: OptionalNullable(Type.String()),
});

/** A record-info reply: the task's status, its tracks, and the failure's code and message. */
export const SunoRecord = replySchema(Type.Object({
  data: Type.Object({
    status: Type.String(),
    response: OptionalNullable(Type.Object({ sunoData: OptionalNullable(Type.Array(SunoTrackReply)) })),
    errorCode: OptionalNullable(Type.Union([Type.Number(), Type.String()])),
    errorMessage: OptionalNullable(Type.String()),
  }),
}));

/** `data` of a record-info reply. */
export type SunoRecordData = ReplyOf<typeof SunoRecord>['data'];
