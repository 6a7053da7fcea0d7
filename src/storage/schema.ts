/** Row types of every table; timestamps are milliseconds since the epoch. */
export interface Database {
  users: UserRow;
  api_tokens: ApiTokenRow;
  settings: SettingRow;
  files: FileRow;
  asset_contents: AssetContentRow;
  asset_refs: AssetRefRow;
  asset_tags: AssetTagRow;
  asset_meta: AssetMetaRow;
  tasks: TaskRow;
  callback_deliveries: CallbackDeliveryRow;
  worker_heartbeats: WorkerHeartbeatRow;
  channel_disables: ChannelDisableRow;
  callback_attempts: CallbackAttemptRow;
  ws_tickets: WsTicketRow;
  conversations: ConversationRow;
  conversation_messages: ConversationMessageRow;
  openai_responses: OpenAiResponseRow;
  skills: SkillRow;
  agents: AgentRow;
  agent_documents: AgentDocumentRow;
  agent_document_chunks: AgentDocumentChunkRow;
  agent_runs: AgentRunRow;
  agent_approvals: AgentApprovalRow;
  digital_humans: DigitalHumanRow;
  mesh3d_histories: Mesh3dHistoryRow;
  mesh3d_materials: Mesh3dMaterialRow;
  user_limits: UserLimitsRow;
  usage_ledger: UsageLedgerRow;
  usage_daily: UsageDailyRow;
  idempotency_keys: IdempotencyKeyRow;
  task_events: TaskEventRow;
  openai_files: OpenAiFileRow;
  batches: BatchRow;
  batch_lines: BatchLineRow;
  user_mcp_tools: UserMcpToolsRow;
  mcp_sessions: McpSessionRow;
  teams: TeamRow;
  team_members: TeamMemberRow;
  console_sessions: ConsoleSessionRow;
  oidc_logins: OidcLoginRow;
  config_records: ConfigRecordRow;
  config_version: ConfigVersionRow;
  audit_log: AuditLogRow;
}

/** A provider, channel, model or MCP server set through the admin API (value: JSON, secrets sealed). */
export interface ConfigRecordRow {
  kind: string;
  key: string;
  value: string;
  updated_at: number;
}

/** The one row (id 1) holding the version of the stored runtime settings. */
export interface ConfigVersionRow {
  id: number;
  version: number;
}

/** One change made through /admin; before and after are JSON with secrets shown as "***". */
export interface AuditLogRow {
  id: string;
  at: number;
  actor_type: string;
  actor_id: string;
  action: string;
  target: string;
  before: string | null;
  after: string | null;
  request_id: string | null;
  ip: string | null;
}

export interface UserRow {
  id: string;
  created_at: number;
}

export interface ApiTokenRow {
  id: string;
  user_id: string;
  name: string | null;
  /** sha256 hex of the plain token; the plain token is never stored. */
  token_hash: string;
  created_at: number;
  /** JSON of the token's limits (limits/limits.ts); null when it has none. */
  limits: string | null;
  /** JSON list of the MCP tool patterns the token may use; null (or absent) means `*`. */
  mcp_tools?: string | null;
  /** The team it works for (its user must be a member), or null. */
  team_id: string | null;
}

/** A user's MCP tool patterns, JSON as a token's. */
export interface UserMcpToolsRow {
  user_id: string;
  mcp_tools: string;
  updated_at: number;
}

/** A session of /mcp (or /mcp/<server>) and the token that opened it. */
export interface McpSessionRow {
  id: string;
  token_id: string;
  user_id: string;
  /** '' for /mcp, else the upstream server of /mcp/<server>. */
  scope: string;
  protocol_version: string;
  created_at: number;
  ended_at: number | null;
}

export interface TeamRow {
  id: string;
  name: string;
  /** JSON of the team's limits, for all its tokens together; null when it has none. */
  limits: string | null;
  created_at: number;
}

export type TeamRole = 'admin' | 'member' | 'viewer';

export interface TeamMemberRow {
  team_id: string;
  user_id: string;
  role: TeamRole;
  created_at: number;
}

/** A console session; `id` is the sha256 hex of the cookie's value. */
export interface ConsoleSessionRow {
  id: string;
  user_id: string;
  /** 1 when the identity provider's role claim made the user an administrator. */
  claims_admin: number;
  csrf: string;
  created_at: number;
  expires_at: number;
}

/** An OpenID Connect sign-in under way, keyed by its state. */
export interface OidcLoginRow {
  state: string;
  nonce: string;
  code_verifier: string;
  expires_at: number;
}

/** A user's limits, JSON as a token's. */
export interface UserLimitsRow {
  user_id: string;
  limits: string;
  updated_at: number;
}

/** One call or task in the usage ledger; costs are in micro-credits. */
export interface UsageLedgerRow {
  /** The task id, or the request id of a call that made no task. */
  id: string;
  kind: 'task' | 'request';
  /** When the call began (the task was submitted): the day and credit period it counts in. */
  created_at: number;
  finished_at: number;
  /** '' for a call refused before its caller was known (an unknown token). */
  user_id: string;
  token_id: string | null;
  endpoint: string;
  /** A catalog alias or workflow name; null when the call named none (never the caller's text). */
  model: string | null;
  provider: string | null;
  channel: string | null;
  /** The task's terminal status, or success / error / refused (turned away before anything ran) for a call. */
  status: string;
  http_status: number | null;
  /** Input tokens neither read from nor written to the upstream's prompt cache. */
  input_tokens: number;
  /** Input tokens read from the upstream's prompt cache. */
  cached_input_tokens: number;
  /** Input tokens written to the upstream's prompt cache. */
  cache_write_tokens: number;
  output_tokens: number;
  outputs: number;
  cost: number;
  reserved: number;
  latency_ms: number;
  request_id: string;
  task_id: string | null;
  /** 0 while the shared counters (Redis) have not taken this settlement in yet. */
  counters_applied: number;
  /** The batch the call ran for (/openai/v1/batches); null outside batches. */
  batch_id: string | null;
  /** The team the call or task was made for; null without one. */
  team_id: string | null;
}

/** The ledger summed per day, user, token, model and provider, kept at settlement. */
export interface UsageDailyRow {
  day: string;
  user_id: string;
  token_id: string;
  model: string;
  provider: string;
  requests: number;
  tasks: number;
  input_tokens: number;
  cached_input_tokens: number;
  cache_write_tokens: number;
  output_tokens: number;
  cost: number;
  errors: number;
}

/** The first answer to a creating POST with an Idempotency-Key. */
export interface IdempotencyKeyRow {
  user_id: string;
  scope: string;
  key: string;
  body_hash: string;
  state: 'running' | 'done';
  status_code: number | null;
  content_type: string | null;
  response: string | null;
  created_at: number;
  expires_at: number;
}

/** Operator settings changed at run time (e.g. the task callback). */
export interface SettingRow {
  key: string;
  value: string;
  updated_at: number;
}

export interface FileRow {
  id: string;
  user_id: string;
  file_name: string;
  mime_type: string;
  size: number;
  blob_key: string;
  created_at: number;
  /** When the URL stops serving; an output kept forever has NEVER_EXPIRES. */
  expires_at: number;
  /** The task whose output this file serves; null for uploads and other temporary files. */
  task_id: string | null;
  /** The asset content (`blake3:<hex>`) an output's bytes are, when they are shared with the registry. */
  content_hash: string | null;
  /** Set when an output was retired at its expiry: its URL answers 410 from then on. */
  expired_at: number | null;
  /** A task output: when the retention sweep looks at it next (its expiry, later when an asset kept it). */
  sweep_at: number | null;
}

/** A task's event as its event stream sends it, numbered per task (tasks.event_seq allocates). */
export interface TaskEventRow {
  task_id: string;
  seq: number;
  /** status, progress, preview or output. */
  kind: string;
  /** JSON: the event's data. */
  data: string;
  created_at: number;
}

/** Asset content, stored once per hash in the blob store under `blob_key`. */
export interface AssetContentRow {
  /** `blake3:<64 hex>`. */
  hash: string;
  size: number;
  blob_key: string;
  created_at: number;
}

/** An asset record: a user's reference to content, with its name, place and metadata. */
export interface AssetRefRow {
  id: string;
  owner_id: string;
  name: string;
  asset_hash: string;
  size: number;
  mime_type: string | null;
  /** File name and subfolder under which /api/view finds the record (type comes from its tags). */
  file_name: string;
  subfolder: string;
  /**
   * input, output or temp: the root the record lives under (set when it is created). A live
   * record's root + subfolder + file_name is unique per owner.
   */
  root: string | null;
  preview_id: string | null;
  /** JSON object. */
  user_metadata: string;
  /** JSON object written by the service. */
  system_metadata: string;
  job_id: string | null;
  is_immutable: number;
  created_at: number;
  updated_at: number;
  /** Set by a soft delete. */
  deleted_at: number | null;
}

export interface AssetTagRow {
  ref_id: string;
  tag: string;
  origin: 'manual' | 'automatic';
  added_at: number;
}

/** One value of the merged metadata (system merged with user) of a record, for filtering. */
export interface AssetMetaRow {
  ref_id: string;
  key: string;
  /** Position within an array value; 0 for scalars. */
  ordinal: number;
  val_str: string | null;
  val_num: number | null;
  val_bool: number | null;
  val_json: string | null;
}

/** A generation task; also the embedded queue's entry (claimable while submitted or its lease ran out). */
export interface TaskRow {
  id: string;
  request_id: string;
  owner_id: string;
  /** X-Client-Id of the submit: realtime pushes go only to that client's sessions. */
  client_id: string | null;
  /** The generation endpoint, e.g. `images.generations`. */
  endpoint: string;
  /** Catalog alias (or workflow name) the request named. */
  model: string;
  provider: string;
  /** The result type: image, audio, video, text, 3d or file. */
  output_type: string;
  /** 1 when run by a built-in engine (cancellable), 0 for an external API provider. */
  cancellable: number;
  status: string;
  progress: number;
  /** Bumped by every change; updates are compare-and-set on it. */
  version: number;
  message: string | null;
  /** original_error_message of the record. */
  error_message: string | null;
  /** JSON: the request's parameters (generate_info.input). */
  input: string;
  /** JSON TaskResult once there is output, usage or billing. */
  result: string | null;
  /** JSON a run saved for its resumption (RunContext.remember), e.g. the upstream task id. */
  saved_state: string | null;
  /** JSON W3C trace-context headers of the submitting request while tracing is on, else null. */
  trace_context: string | null;
  callback_url: string | null;
  /** JSON array of the statuses the task's callback announces; null: every status. */
  callback_events: string | null;
  /** The submit's x-deadline (epoch ms): still waiting then, the task fails; null: none. */
  deadline_at: number | null;
  /** Instance that ran (or runs) the task. */
  server: string | null;
  /** Times a worker claimed the task. */
  attempts: number;
  lease_owner: string | null;
  lease_until: number | null;
  created_at: number;
  updated_at: number;
  started_at: number | null;
  finished_at: number | null;
  /** The API token that submitted the task; null for tasks made without one (the agent's tools). */
  token_id: string | null;
  /** Micro-credits the submit reserved against credit limits, released when the task ends. */
  reserved_credits: number;
  /** The sequence number of the task's last event (task_events). */
  event_seq: number;
  /** The team its token worked for: the team's limits and usage count it; null without one. */
  team_id: string | null;
}

/** The liveness of one instance of the database queue: it is alive until `alive_until` unless it beats again. */
export interface WorkerHeartbeatRow {
  instance_id: string;
  alive_until: number;
}

/** A channel disabled until an administrator enables it (by an administrator, or by an upstream's 401/403). */
export interface ChannelDisableRow {
  provider: string;
  name: string;
  reason: string;
  disabled_at: number;
}

/** One task status update to POST to the callback address (the outbox). */
export interface CallbackDeliveryRow {
  /** Also the `webhook-id` header, the same on every retry. */
  id: string;
  task_id: string;
  /** The task version the body shows; deliveries of a task go out in this order. */
  seq: number;
  url: string;
  body: string;
  /** pending, delivered or failed (retries used up). */
  state: string;
  attempts: number;
  next_attempt_at: number;
  /** Set while a dispatcher is sending it, so two dispatchers never send it at once. */
  lease_until: number | null;
  created_at: number;
  updated_at: number;
}

/** One try at a delivery: what the receiver answered, or why it could not be reached. */
export interface CallbackAttemptRow {
  id: string;
  delivery_id: string;
  task_id: string;
  /** 1 for the first try, 2–4 for the retries. */
  attempt: number;
  at: number;
  http_status: number | null;
  error: string | null;
  duration_ms: number;
}

/** A single-use realtime ticket (POST /v1/realtime/tickets); only its sha256 is kept. */
export interface WsTicketRow {
  ticket_hash: string;
  user_id: string;
  /** The API token that asked for it: revoking the token ends sessions opened with the ticket. */
  token_id: string;
  expires_at: number;
}

/** A 3D history: one generation or edit, the source later edits name. */
export interface Mesh3dHistoryRow {
  id: string;
  owner_id: string;
  material_id: string;
  task_id: string;
  /** The history an edit worked on; null for a generation. */
  source_history_id: string | null;
  /** text, image, multiview, or the edit operation (segmentation, completion, smart_lowpoly, ...). */
  operation: string;
  /** Catalog alias, provider code and upstream version string of the model that ran it. */
  model: string;
  provider: string;
  model_version: string;
  /** Provider and version of the generation at the root of the chain (its family rules). */
  base_provider: string;
  base_model_version: string;
  /** The task's status, copied when the task changes (and on read, so a missed change is caught up). */
  status: string;
  /** `blake3:<hex>` of the result's model file, the input of edits on this history. */
  model_ref: string | null;
  /** JSON array of the result's part names. */
  parts: string | null;
  /** JSON `{rig_type, spec, bones?}` of a rigged result. */
  rig: string | null;
  /** JSON of the upstream ids an adapter saved for the task (e.g. the upstream task id). */
  upstream: string | null;
  created_at: number;
  updated_at: number;
}

/** A 3D material: the result of one generation or edit, with the history that made it. */
export interface Mesh3dMaterialRow {
  id: string;
  owner_id: string;
  history_id: string;
  task_id: string;
  created_at: number;
}

/** A digital-human resource: an avatar made from the owner's source video (POST /v1/digital-human/create). */
export interface DigitalHumanRow {
  id: string;
  owner_id: string;
  /** Catalog alias the resource was created with. */
  model: string;
  /** The digital-human.create task that made it. */
  task_id: string;
  /** `blake3:<hex>` of the source video kept as the owner's asset; null when an upstream kept it. */
  source_hash: string | null;
  /** JSON DigitalHumanVideo: the source video's frames (size, rate, duration). */
  video: string;
  /** 1 on, 0 off: optimisation for live streaming. */
  interaction_optimise: number;
  /** The upstream provider's own resource id, when an upstream trained the avatar. */
  upstream_resource_id: string | null;
  created_at: number;
}

/** A chat conversation a caller named (conversationId / sessionId), scoped to its owner. */
export interface ConversationRow {
  owner_id: string;
  id: string;
  /** Messages stored so far; the next message's seq is one more. */
  message_count: number;
  created_at: number;
  updated_at: number;
}

/** One message of a conversation, in the order of `seq` (from 1). */
export interface ConversationMessageRow {
  owner_id: string;
  conversation_id: string;
  seq: number;
  /** JSON of the message as stored (media by URL, never base64 audio, files or video). */
  message: string;
  created_at: number;
}

/** A response of /openai/v1/responses, kept for previous_response_id. */
export interface OpenAiResponseRow {
  id: string;
  owner_id: string;
  /** JSON of the conversation up to and including the response (instructions left out). */
  messages: string;
  /** JSON of the response object. */
  response: string;
  created_at: number;
}

/** A personal skill of the /v1/responses agent: instructions, references and assets for the model. */
export interface SkillRow {
  id: string;
  owner_id: string;
  name: string;
  description: string;
  instructions: string;
  /** JSON array of {name, content}. */
  references_json: string;
  /** JSON array of {name, description, url, file_type}. */
  assets_json: string;
  created_at: number;
}

/** A knowledge-base agent; owner_id null for a deployment-wide agent (created with the admin token). */
export interface AgentRow {
  id: string;
  owner_id: string | null;
  name: string;
  instructions: string | null;
  /** 1 for the deployment's main agent (useGlobalMainAgent), else 0. */
  main: number;
  created_at: number;
}

export interface AgentDocumentRow {
  id: string;
  agent_id: string;
  title: string;
  content: string;
  created_at: number;
}

/** A passage of a document as the full-text index holds it (FTS5 on SQLite, tsvector on PostgreSQL). */
export interface AgentDocumentChunkRow {
  document_id: string;
  agent_id: string;
  seq: number;
  title: string;
  content: string;
}

/** An agent stream running now, so POST /v1/responses/cancel on any instance finds it. */
export interface AgentRunRow {
  owner_id: string;
  request_id: string;
  instance_id: string;
  started_at: number;
}

/** How an approval an agent run asked for stands. */
export type AgentApprovalStatus = 'pending' | 'approved' | 'rejected' | 'timed_out';

/** An approval an agent run asked for; kept while the run goes on. */
export interface AgentApprovalRow {
  id: string;
  owner_id: string;
  request_id: string;
  instance_id: string;
  status: AgentApprovalStatus;
  created_at: number;
}

/** A file of OpenAI's Files API (/openai/v1/files): a batch's input, output or error file. */
export interface OpenAiFileRow {
  id: string;
  user_id: string;
  /** `batch` (uploaded), `batch_output` (written by a batch). */
  purpose: string;
  filename: string;
  bytes: number;
  blob_key: string;
  created_at: number;
}

/** A batch of OpenAI's Batch API; times in ms, null until the batch reaches them. */
export interface BatchRow {
  id: string;
  user_id: string;
  token_id: string | null;
  endpoint: string;
  input_file_id: string;
  completion_window: string;
  /** JSON of the caller's metadata, or null. */
  metadata: string | null;
  status: string;
  /** JSON of the validation errors, `[{code, message, param, line}]`. */
  errors: string | null;
  output_file_id: string | null;
  error_file_id: string | null;
  request_total: number;
  request_completed: number;
  request_failed: number;
  created_at: number;
  expires_at: number;
  in_progress_at: number | null;
  finalizing_at: number | null;
  completed_at: number | null;
  failed_at: number | null;
  expired_at: number | null;
  cancelling_at: number | null;
  cancelled_at: number | null;
  lease_owner: string | null;
  lease_until: number | null;
}

/** One input line of a batch and, once done, its output line. */
export interface BatchLineRow {
  batch_id: string;
  line_no: number;
  custom_id: string | null;
  body: string | null;
  state: 'pending' | 'running' | 'done';
  result: string | null;
  failed: number;
}
