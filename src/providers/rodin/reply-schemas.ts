/** What the Rodin adapter reads of Hyper3D's replies. */
import { Type } from 'typebox';
import { OptionalNullable, replySchema } from '../upstream-reply.ts';

/** Every reply: a rejection (e.g. no funds) can come inside a success status, in `error`. */
export const RodinEnvelope = replySchema(Type.Object({ error: OptionalNullable(Type.String()), message: OptionalNullable(Type.String()) }));

/** A generation reply: the task uuid and the key its status is asked with. */
export const RodinSubmitted = replySchema(Type.Object({ uuid: Type.String(), jobs: Type.Object({ subscription_key: Type.String() }) }));

/** A status reply: the status of each job of the task. */
export const RodinStatus = replySchema(Type.Object({ jobs: Type.Array(Type.Object({ status: Type.String() }), { minItems: 1 }) }));

/** A download reply: the result files. */
export const RodinDownloads = replySchema(Type.Object({ list: Type.Optional(Type.Array(Type.Object({ url: Type.String(), name: Type.String() }))) }));
