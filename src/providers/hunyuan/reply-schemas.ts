/** What the Hunyuan adapter reads of Tencent Cloud's `{Response: {…, RequestId}}` replies. */
import { Type } from 'typebox';
import { OptionalNullable, replySchema } from '../upstream-reply.ts';

/** Every reply: a refusal is `Response.Error` inside HTTP 200. */
export const TencentEnvelope = replySchema(Type.Object({
  Response: Type.Object({ Error: Type.Optional(Type.Object({ Code: Type.String(), Message: Type.Optional(Type.String()) })) }),
}));

/** A job submit reply. */
export const HunyuanSubmitted = replySchema(Type.Object({ Response: Type.Object({ JobId: Type.String({ minLength: 1 }) }) }));

/** A job query reply: its status, the failure's code and message, the result files when done. */
export const HunyuanJob = replySchema(Type.Object({
  Response: Type.Object({
    Status: Type.String(),
    ErrorCode: OptionalNullable(Type.String()),
    ErrorMessage: OptionalNullable(Type.String()),
    ResultFile3Ds: OptionalNullable(Type.Array(Type.Object({
      Type: OptionalNullable(Type.String()),
      Url: OptionalNullable(Type.String()),
      PreviewImageUrl: OptionalNullable(Type.String()),
    }))),
  }),
}));
