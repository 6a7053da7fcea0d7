/** What the ComfyUI adapter reads of ComfyUI's replies and WebSocket messages. */
import { Type } from 'typebox';
import { OptionalNullable, replySchema } from '../upstream-reply.ts';

/** Node ids are strings in ComfyUI's messages; some builds send numbers. */
const NodeId = Type.Union([Type.String(), Type.Number()]);

/** A text field of a message or a refusal (numbers are shown as text). */
const Text = Type.Union([Type.String(), Type.Number()]);

/** A POST /upload/image reply: the name ComfyUI filed the image under, in its subfolder. */
export const ComfyUploaded = replySchema(Type.Object({ name: Type.String(), subfolder: OptionalNullable(Type.String()) }));

/** A POST /prompt reply. */
export const ComfyQueued = replySchema(Type.Object({ prompt_id: Type.String() }));

/** A GET /queue reply: its items are `[number, prompt_id, …]`. */
export const ComfyQueue = replySchema(Type.Object({
  queue_running: Type.Optional(Type.Array(Type.Array(Type.Unknown()))),
  queue_pending: Type.Optional(Type.Array(Type.Array(Type.Unknown()))),
}));

/** An `execution_error` message's data (also in a history entry's status messages). */
export const ComfyExecutionError = replySchema(Type.Object({
  node_id: OptionalNullable(NodeId),
  node_type: OptionalNullable(Text),
  exception_type: OptionalNullable(Text),
  exception_message: OptionalNullable(Text),
}));

/** An `execution_interrupted` message's data. */
export const ComfyInterrupted = replySchema(Type.Object({ node_id: OptionalNullable(NodeId), node_type: OptionalNullable(Text) }));

/** A GET /history/{prompt_id} reply: `{}` while the prompt waits or runs, else its entry. */
export const ComfyHistory = replySchema(Type.Record(Type.String(), Type.Object({
  /** Per node, lists of what it wrote: files (see ComfyOutputFile), but also texts and flags. */
  outputs: OptionalNullable(Type.Record(Type.String(), Type.Record(Type.String(), Type.Unknown()))),
  status: OptionalNullable(Type.Object({
    status_str: Type.Optional(Type.String()),
    completed: Type.Optional(Type.Boolean()),
    /** `[event, data]` pairs, the WebSocket's messages of the run. */
    messages: Type.Optional(Type.Array(Type.Tuple([Type.String(), Type.Unknown()]))),
  })),
})));

/** A file of a node's outputs, as /view addresses it. */
export const ComfyOutputFile = replySchema(Type.Object({ filename: Type.String(), subfolder: OptionalNullable(Type.String()), type: OptionalNullable(Type.String()) }));

/** A POST /prompt refusal (400): the error and each node's problems. */
export const ComfyRefusal = replySchema(Type.Object({
  error: Type.Optional(Type.Union([Type.String(), Type.Object({ message: OptionalNullable(Text), details: OptionalNullable(Text) })])),
  node_errors: Type.Optional(Type.Record(Type.String(), Type.Object({
    class_type: OptionalNullable(Text),
    errors: Type.Optional(Type.Array(Type.Object({ message: OptionalNullable(Text), details: OptionalNullable(Text) }))),
  }))),
}));

/** A WebSocket message about a prompt (messages about none, e.g. `status`, have no prompt_id). */
export const ComfyPromptMessage = replySchema(Type.Object({ type: Type.String(), data: Type.Object({ prompt_id: Type.String() }) }));

/** The metadata of a binary preview frame (type 4). */
export const ComfyPreviewMetadata = replySchema(Type.Object({ image_type: Type.String(), prompt_id: Type.Optional(Type.String()) }));

/** The data of the WebSocket messages that tell a prompt's progress, by type. */
export const ComfyProgressMessages = {
  execution_cached: replySchema(Type.Object({ nodes: Type.Array(NodeId) })),
  /** node null: the prompt finished. */
  executing: replySchema(Type.Object({ node: OptionalNullable(NodeId) })),
  progress: replySchema(Type.Object({ node: OptionalNullable(NodeId), value: Type.Optional(Type.Number()), max: Type.Optional(Type.Number()) })),
  executed: replySchema(Type.Object({ node: NodeId })),
};
