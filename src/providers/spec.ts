import type { LiveModel } from '../catalog/catalog.ts';
import type { BillingEntry, MediaSize, NodeStatus, Usage } from '../core/result-types.ts';

export type { BillingEntry, MediaSize, NodeStatus, Usage };
import type { ChatContentPart, ChatMessage, ChatParams, ChatTool, ChatToolCall, ChatToolChoice } from '../core/chat-messages.ts';

export type { ChatContentPart, ChatMessage, ChatParams, ChatTool, ChatToolCall, ChatToolChoice };
import type { Endpoint, TaskInputs } from '../endpoints/endpoint-table.ts';

export type { Endpoint, TaskInputs };

/** An endpoint with its typed input: narrowing on `endpoint` types `input`. */
export type TaskInput = { [E in Endpoint]: { endpoint: E; input: TaskInputs[E] } }[Endpoint];

/** What every task carries besides its endpoint and input. */
export interface JobContext {
  taskId: string;
  ownerId: string;
  model: LiveModel;
  /** 1 on the first run; a resumed task (its worker died) runs again from the start. */
  attempt: number;
  /**
   * What an earlier run of this task saved with `RunContext.remember` (e.g. the upstream task
   * id), so a resumed run watches the upstream task instead of submitting it again.
   */
  saved?: Record<string, unknown>;
}

/**
 * One task as an engine sees it: its endpoint and that endpoint's input, typed (a union by
 * endpoint: narrowing on `endpoint`, or `inputOf`, gives the input its endpoint's type).
 */
export type GenerationJob = JobContext & TaskInput;

/**
 * The input of a job that must be of `endpoint` (the adapter's declaration guaranteed the
 * endpoint at submit); another endpoint's job is refused.
 */
export function inputOf<E extends Endpoint>(job: GenerationJob, endpoint: E): TaskInputs[E] {
  if (job.endpoint !== endpoint) throw new TaskRejectedError(`a ${endpoint} input was expected, not ${job.endpoint}`);
  return job.input as TaskInputs[E];
}

/**
 * A job of one endpoint (or of several), e.g. `JobOf<'images.edits'>`: a union by endpoint, so
 * narrowing on `endpoint` types `input`; for a generic `E` its input is `TaskInputs[E]`.
 */
export type JobOf<E extends Endpoint> = JobContext & { [K in E]: { endpoint: K; input: TaskInputs[K] } }[E];

/** Limits an adapter declares for an endpoint; a request beyond them is refused at submit (400). */
export interface EndpointLimits {
  /** The largest width or height of an image size it draws. */
  maxImageSide?: number;
  /** The most input images an edit takes. */
  maxInputImages?: number;
  /** The most images one request makes (`n`). */
  maxOutputs?: number;
}

/** What an adapter serves of one endpoint. */
export interface EndpointDeclaration {
  /**
   * The input fields the adapter reads. A request field outside the list is not passed on: the
   * task runs without it and records a warning. Absent: it reads every field.
   */
  fields?: readonly string[];
  /** Fields the adapter cannot honour at all: setting one is 400 unsupported_parameter at submit. */
  refused?: readonly string[];
  limits?: EndpointLimits;
}

/**
 * What an adapter serves, as data: the endpoints it runs, with their fields and limits. A
 * request for an endpoint it does not list is 400 model_capability_mismatch at submit.
 */
export type EngineDeclaration = { readonly [E in Endpoint]?: EndpointDeclaration };

export interface RunContext {
  /** Aborted when the task is cancelled or the worker loses it; stop and throw. */
  signal: AbortSignal;
  /** Reports progress in percent (never decreasing in the record) with an optional message and, for workflows, the node status. */
  progress(percent: number, message?: string, nodeStatus?: NodeStatus): Promise<void>;
  /** Persists state a resumed run needs (upstream task id, workflow prompt id) before waiting on it. */
  remember(state: Record<string, unknown>): Promise<void>;
  /**
   * The bytes behind a reference given in a request: a URL of this gateway's files (read from
   * the store, no network), an asset hash `blake3:<hex>`, a `data:` URI, or an http(s) URL
   * (fetched, bounded by the file size limit).
   */
  readInput(ref: string): Promise<InputFile>;
  /** A public URL for bytes an adapter must hand to an upstream (e.g. a decoded data URI). */
  publish(data: Buffer, fileName: string, mimeType: string): Promise<string>;
  /** Records a request option the run could not pass on; a successful task lists it in generate_info.warnings. */
  warn(message: string): void;
  /**
   * Shows a draft of the output while the run goes on (an engine's preview image): stored as a
   * file and sent as a `preview` event of the task's stream. Never fails the run.
   */
  preview(image: Buffer, mimeType: string): Promise<void>;
}

/** Bytes read from a request reference. */
export interface InputFile {
  data: Buffer;
  mimeType: string;
  fileName: string;
}

/** A file an engine produced; the gateway stores it, serves it and registers it as an asset. */
export interface GeneratedFile {
  /** GeneralOutput.type: image, audio, video, 3d or file. */
  type: string;
  data: Buffer;
  fileName: string;
  mimeType: string;
  mediaSize?: MediaSize;
  hasAudio?: boolean;
  /** GeneralOutput.role, e.g. model, base_model, pbr_model, preview for 3D results. */
  role?: string;
}

export interface GenerationOutput {
  files: GeneratedFile[];
  /** Text outputs (GeneralOutput with content). */
  texts?: { content: string; role?: string }[];
  usage?: Usage;
  billings?: BillingEntry[];
  nodeStatus?: NodeStatus;
  /** Domain data kept with the task result (e.g. a digital-human resource id, 3D parts or rig). */
  extra?: Record<string, unknown>;
}

/**
 * Refuses a task before it starts (bad parameters for this engine, policy): the task ends
 * `rejected` and a synchronous caller gets 422 task_rejected.
 */
export class TaskRejectedError extends Error {}

/** The reason a run's signal is aborted when the task was cancelled (not when its worker stops). */
export class TaskCancelledError extends Error {}

/**
 * The work failed for a reason worth showing (an upstream's refusal, a bad input file): the task
 * ends `failed` with `message` and, as original_error_message, the upstream's own text.
 */
export class TaskFailedError extends Error {
  readonly originalMessage?: string;

  constructor(message: string, originalMessage?: string) {
    super(message);
    this.originalMessage = originalMessage;
  }
}

/**
 * The failure of work an upstream accepted (its reference was saved): the work is never sent to
 * another channel, unless `upstreamFault` says the upstream failed for reasons of its own (an
 * internal error, not a refusal of the content).
 */
export class AcceptedWorkError extends TaskFailedError {
  readonly upstreamFault: boolean;

  constructor(message: string, originalMessage: string | undefined, upstreamFault: boolean) {
    super(message, originalMessage);
    this.upstreamFault = upstreamFault;
  }
}

/** Something that runs generation tasks: the built-in `local` engine, a workflow engine, an upstream API. */
export interface GenerationEngine {
  /** Built-in engines can stop a running task; external API providers cannot. */
  readonly cancellable: boolean;
  /** What it serves; absent: it takes every endpoint and refuses what it cannot run in `check`. */
  readonly serves?: EngineDeclaration;
  /** Checks a job before it starts; throws TaskRejectedError to refuse it. */
  check?(job: GenerationJob): void | Promise<void>;
  run(job: GenerationJob, ctx: RunContext): Promise<GenerationOutput>;
  /** A model this engine serves that the catalog does not list (a workflow engine's workflow), by name. */
  findModel?(name: string): LiveModel | undefined;
  /** Every model this engine serves that the catalog does not list, as they are now (listed by /v1/models/list). */
  listModels?(): LiveModel[];
}

// ---- Chat: what answers POST /v1/chat/completions and the agent's model calls ----

/** One chat call: the model, the whole conversation (history included) and the parameters. */
export interface ChatRequest {
  model: LiveModel;
  messages: ChatMessage[];
  params: ChatParams;
  /** The call as it came in an upstream API's own shape; `messages` and `params` are its translation. */
  native?: NativeCall;
}

/**
 * A call made in Anthropic's Messages API shape (the /anthropic surface). An adapter that speaks
 * that API sends `body` as it came (its model, and `max_tokens` as the routed params hold it,
 * replaced) with `headers`, and hands back the upstream's answer as it came (`native` of the
 * completion, of each chunk); every other adapter reads the translated messages and params.
 */
export interface NativeCall {
  api: 'anthropic';
  body: Record<string, unknown>;
  /** Request headers passed on (anthropic-beta). */
  headers: Record<string, string>;
}

/** One upstream stream event as it came: its event name and data. */
export interface NativeEvent {
  event: string;
  data: string;
}

/** A chat call's tokens in OpenAI's names: `prompt_tokens` is all the input, cached and written to the cache included. */
export interface ChatUsage {
  prompt_tokens: number;
  completion_tokens: number;
  total_tokens: number;
  /** Of `prompt_tokens`: read from the upstream's prompt cache, and written to it (priced apart, docs/limits.md). */
  prompt_tokens_details?: { cached_tokens?: number; cache_write_tokens?: number };
  [detail: string]: unknown;
}

export type ChatFinishReason = 'stop' | 'length' | 'tool_calls' | 'content_filter' | 'function_call';

/** A non-streamed answer (`chat.completion`). */
export interface ChatCompletion {
  id: string;
  object: 'chat.completion';
  created: number;
  model: string;
  choices: {
    index: number;
    message: { role: 'assistant'; content: string | null; tool_calls?: ChatToolCall[]; refusal?: string | null; [field: string]: unknown };
    finish_reason: ChatFinishReason | null;
    /** The stop sequence that ended the answer, as vLLM and the local model report it. */
    stop_reason?: string | number | null;
    logprobs?: unknown;
  }[];
  usage?: ChatUsage;
  /** The upstream's answer as it came, for a NativeCall it served in its own shape. */
  native?: string;
  [field: string]: unknown;
}

/** A piece of a streamed tool call; `index` says which call it continues. */
export interface ChatToolCallDelta {
  index: number;
  id?: string;
  type?: 'function';
  function?: { name?: string; arguments?: string };
}

/** One streamed event (`chat.completion.chunk`); the usage chunk has no choices. */
export interface ChatChunk {
  id: string;
  object: 'chat.completion.chunk';
  created: number;
  model: string;
  choices: {
    index: number;
    delta: { role?: 'assistant'; content?: string | null; refusal?: string | null; tool_calls?: ChatToolCallDelta[]; [field: string]: unknown };
    finish_reason: ChatFinishReason | null;
    /** The stop sequence that ended the answer, as vLLM and the local model report it. */
    stop_reason?: string | number | null;
    logprobs?: unknown;
  }[];
  usage?: ChatUsage | null;
  /** The upstream's event this chunk was read from, for a NativeCall served in its own shape. */
  native?: NativeEvent;
  [field: string]: unknown;
}

/** Which model, provider and channel served a call. */
export interface ServedRoute {
  model: string;
  provider: string;
  channel: string;
}

export interface ChatCallOptions {
  /** Aborted when the caller goes away (the client disconnected): stop and release the upstream call. */
  signal: AbortSignal;
  /** Told, before the answer starts, which model, provider and channel took the call. */
  served?(route: ServedRoute): void;
}

/**
 * Something that answers chat calls: the built-in local model or an upstream chat API. Failures
 * are ApiErrors: upstream_error (502), upstream_timeout (504), rate_limited (429, with
 * Retry-After), invalid_request (400, the upstream refused the parameters).
 */
export interface ChatModel {
  complete(request: ChatRequest, options: ChatCallOptions): Promise<ChatCompletion>;
  /**
   * Resolves once the model accepted the call (a failure before that rejects here, so the caller
   * can still answer with an error status); the chunks follow and, when the model reports usage,
   * end with a usage chunk. A failure after the start is thrown by the iteration.
   */
  stream(request: ChatRequest, options: ChatCallOptions): Promise<AsyncIterable<ChatChunk>>;
  /** OpenAI's Responses API as the upstream itself serves it (the `openai` adapter); absent when it does not. */
  responses?: ResponsesApi;
  /** The upstream's own count of the request's input tokens where its API has one (Anthropic's count_tokens), else undefined. */
  countTokens?(request: ChatRequest, options: ChatCallOptions): Promise<number | undefined>;
}

// ---- OpenAI's Responses API passed through to an upstream that serves it ----

/** One event of an upstream's Responses stream: its type and its data as the upstream sent it. */
export interface UpstreamResponsesEvent {
  type: string;
  data: string;
  /** The usage of the response this event ends (response.completed, incomplete or failed). */
  usage?: ChatUsage;
}

/** An upstream's Responses answer, unchanged. */
export type UpstreamResponses =
  /** The response object's JSON text as sent, and its usage. */
  | { kind: 'response'; text: string; usage: ChatUsage | undefined }
  /** The events; the iteration throws (an ApiError) when the upstream fails midway or stops before the response ends. */
  | { kind: 'stream'; events: AsyncIterable<UpstreamResponsesEvent> };

/** An upstream's own /responses. Failures are ApiErrors, as ChatModel's. */
export interface ResponsesApi {
  /** Sends the caller's body with only `model` replaced by the model's upstream name (`stream` as the body says). */
  respond(model: LiveModel, body: Record<string, unknown>, options: ChatCallOptions): Promise<UpstreamResponses>;
}

/**
 * A Responses call routed over a model's channels: sent as it came to a channel whose upstream
 * serves the Responses API for that model, else made as a chat call.
 */
export interface ResponsesCall {
  model: LiveModel;
  /** The caller's body. */
  body: Record<string, unknown>;
  stream: boolean;
  /** The chat parameters the body translates to (fitted to a fallback model like a chat call's). */
  params: ChatParams;
  /** The conversation as chat messages, read when a target needs it (once). */
  messages(): Promise<ChatMessage[]>;
}

/** How a routed Responses call was answered. */
export type RoutedResponses =
  | { kind: 'upstream'; answer: UpstreamResponses }
  | { kind: 'completion'; completion: ChatCompletion }
  | { kind: 'stream'; chunks: AsyncIterable<ChatChunk> };

// ---- Embeddings, transcription and rerank: synchronous calls, like chat ----

/** One embeddings call: texts (never empty) and, when the caller chose one, the vector length. */
export interface EmbeddingRequest {
  model: LiveModel;
  input: string[];
  dimensions?: number;
  user?: string;
}

export interface EmbeddingResult {
  /** One vector per input text, in order, as plain numbers. */
  vectors: number[][];
  promptTokens: number;
}

/** Something that embeds texts: the local model or an OpenAI-compatible embeddings API. Failures are ApiErrors, as ChatModel's. */
export interface EmbeddingModel {
  embed(request: EmbeddingRequest, options: ChatCallOptions): Promise<EmbeddingResult>;
}

/** One transcription call: the audio file and the caller's hints. */
export interface TranscriptionRequest {
  model: LiveModel;
  file: InputFile;
  /** ISO-639-1 language of the speech, when the caller knows it. */
  language?: string;
  /** Text that precedes the audio or names its vocabulary. */
  prompt?: string;
  temperature?: number;
}

export interface TranscriptSegment {
  start: number;
  end: number;
  text: string;
}

/** What a transcription found: the text, and what it knows of the audio. */
export interface Transcription {
  text: string;
  /** ISO-639-1 code, or null when nothing tells. */
  language: string | null;
  /** Seconds of audio. */
  duration: number;
  channels?: number;
  segments?: TranscriptSegment[];
  usage?: { type: 'tokens'; input_tokens: number; output_tokens: number; total_tokens: number } | { type: 'duration'; seconds: number };
}

export interface TranscriptionModel {
  transcribe(request: TranscriptionRequest, options: ChatCallOptions): Promise<Transcription>;
}

/** One rerank call: the documents scored against the query. */
export interface RerankRequest {
  model: LiveModel;
  query: string;
  documents: string[];
  /** Keep the best this many (default all). */
  topN?: number;
}

export interface RerankResult {
  /** Best first: the document's index in the request and its score (higher is more relevant). */
  results: { index: number; relevance_score: number }[];
  usage: { total_tokens?: number; search_units?: number };
}

export interface RerankModel {
  rerank(request: RerankRequest, options: ChatCallOptions): Promise<RerankResult>;
}
