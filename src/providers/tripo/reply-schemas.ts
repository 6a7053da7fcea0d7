/** What the Tripo adapter reads of the OpenAPI's `{code, data}` replies. */
import { Type } from 'typebox';
import { OptionalNullable, replySchema, type ReplyOf } from '../upstream-reply.ts';

/** Every reply: code 0, or another code and Tripo's words (see TripoError). */
export const TripoEnvelope = replySchema(Type.Object({ code: Type.Number() }));

/** Tripo's words in a refusal. */
export const TripoError = replySchema(Type.Object({ message: Type.String(), suggestion: OptionalNullable(Type.String()) }));

/** A POST /task reply. */
export const TripoCreated = replySchema(Type.Object({ data: Type.Object({ task_id: Type.String({ minLength: 1 }) }) }));

/** A result URL of `output`. */
const ResultUrl = OptionalNullable(Type.String());
/** A result of `result` (the Blender add-on's shape): `{url, type}`. */
const ResultObject = OptionalNullable(Type.Object({ url: OptionalNullable(Type.String()) }));

/** A GET /task/{id} reply: the status, and the outputs once it succeeded. */
export const TripoTaskReply = replySchema(Type.Object({
  data: Type.Object({
    status: Type.String(),
    progress: OptionalNullable(Type.Number()),
    output: OptionalNullable(Type.Object({
      model: ResultUrl,
      base_model: ResultUrl,
      pbr_model: ResultUrl,
      rendered_image: ResultUrl,
      /** The answer of a riggability check. */
      riggable: OptionalNullable(Type.Boolean()),
      rig_type: OptionalNullable(Type.String()),
      topology: OptionalNullable(Type.String()),
    })),
    result: OptionalNullable(Type.Object({ model: ResultObject, base_model: ResultObject, pbr_model: ResultObject, rendered_image: ResultObject })),
    error_code: OptionalNullable(Type.Number()),
    error_msg: OptionalNullable(Type.String()),
  }),
}));

/** The temporary S3 credentials of POST /upload/sts/token. */
export const TripoStsToken = replySchema(Type.Object({
  data: Type.Object({
    s3_host: Type.String(),
    resource_bucket: Type.String(),
    resource_uri: Type.String(),
    session_token: Type.String(),
    sts_ak: Type.String(),
    sts_sk: Type.String(),
  }),
}));

/** `data` of a task reply. */
export type TripoTaskData = ReplyOf<typeof TripoTaskReply>['data'];

/** The temporary S3 credentials. */
export type StsToken = ReplyOf<typeof TripoStsToken>['data'];
