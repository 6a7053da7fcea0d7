/** What the MiniMax adapter reads of MiniMax's replies, each with its `base_resp`. */
import { Type } from 'typebox';
import { OptionalNullable, replySchema } from '../upstream-reply.ts';

/** MiniMax ids are integers in its JSON (exact only within safe integers), or strings. */
const UpstreamId = Type.Union([Type.Integer({ minimum: Number.MIN_SAFE_INTEGER, maximum: Number.MAX_SAFE_INTEGER }), Type.String({ minLength: 1 })]);

/** Every reply: errors come with HTTP 200 and a non-zero status_code. */
export const MinimaxBaseResp = replySchema(Type.Object({
  base_resp: Type.Object({ status_code: Type.Number(), status_msg: OptionalNullable(Type.String()) }),
}));

/** A /v1/files/upload reply. */
export const MinimaxUploaded = replySchema(Type.Object({ file: Type.Object({ file_id: UpstreamId }) }));

/** The audio of a t2a_v2 reply: hex bytes, or a URL. */
export const MinimaxSpeechAudio = replySchema(Type.Object({ data: Type.Object({ audio: Type.String({ minLength: 1 }) }) }));

/** extra_info of a t2a_v2 reply: characters billed and the audio's length in milliseconds. */
export const MinimaxSpeechInfo = replySchema(Type.Object({
  extra_info: OptionalNullable(Type.Object({ usage_characters: OptionalNullable(Type.Number()), audio_length: OptionalNullable(Type.Number()) })),
}));

/** A t2a_async_v2 reply. */
export const MinimaxAsyncSubmitted = replySchema(Type.Object({ task_id: UpstreamId, usage_characters: OptionalNullable(Type.Number()) }));

/** A t2a_async_query_v2 reply; file_id is there once the task succeeded. */
export const MinimaxAsyncTask = replySchema(Type.Object({ status: Type.String(), file_id: OptionalNullable(UpstreamId) }));
