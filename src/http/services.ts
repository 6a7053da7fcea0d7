import type { Logger } from 'pino';
import type { Registry } from 'prom-client';
import type { Settings } from '../config/settings.ts';
import type { RuntimeConfig } from '../config/runtime-config.ts';
import type { Db } from '../storage/db.ts';
import type { BlobStore } from '../storage/blobs/blob-store.ts';
import type { TokenService } from '../auth/tokens.ts';
import type { TeamService } from '../auth/teams.ts';
import type { ConsoleSessions } from '../auth/console-sessions.ts';
import type { OidcSignIn } from '../auth/oidc-sign-in.ts';
import type { CatalogView } from '../catalog/catalog.ts';
import type { FileService } from '../files/file-service.ts';
import type { AssetService } from '../assets/asset-service.ts';
import type { EventBus } from '../storage/event-bus.ts';
import type { RedisEventBus } from '../storage/redis-event-bus.ts';
import type { TaskService } from '../tasks/task-service.ts';
import type { TaskEventStreams } from '../tasks/task-event-streams.ts';
import type { GenerationService } from '../tasks/generation-service.ts';
import type { ImageService } from '../images/service.ts';
import type { VideoService } from '../video/service.ts';
import type { AudioService } from '../audio/service.ts';
import type { DigitalHumanGenerations } from '../digital-human/digital-human-generations.ts';
import type { Mesh3dService } from '../mesh3d/service.ts';
import type { CallbackDispatcher } from '../tasks/callback-dispatcher.ts';
import type { WsTicketService } from '../realtime/ws-ticket-service.ts';
import type { ChatService } from '../chat/chat-service.ts';
import type { DigitalHumanService } from '../digital-human/digital-human-service.ts';
import type { AgentServices } from '../agent/create-agent-services.ts';
import type { LimitsService } from '../limits/limits-service.ts';
import type { IdempotencyService } from '../limits/idempotency.ts';
import type { UsageLedger } from '../limits/usage-ledger.ts';
import type { EmbeddingService } from '../embeddings/service.ts';
import type { RerankService } from '../rerank/service.ts';
import type { TranscriptionService } from '../audio/transcription-service.ts';
import type { SpeechAudioService } from '../audio/speech-audio.ts';
import type { OpenAiResponsesService } from '../openai/responses-service.ts';
import type { ChannelRouter } from '../routing/router.ts';
import type { OpenAiFileService } from '../batches/openai-files.ts';
import type { BatchService } from '../batches/batch-service.ts';
import type { AnthropicMessagesService } from '../anthropic/messages-service.ts';
import type { ModelList } from '../limits/model-list.ts';
import type { McpService } from '../mcp/mcp-service.ts';
import type { LiveConfig } from '../runtime-settings/live-config.ts';
import type { RuntimeSettingsService } from '../runtime-settings/runtime-settings-service.ts';
import type { AuditLog } from '../runtime-settings/audit-log.ts';

/** The shared services, created once at boot and handed to every route plugin. */
export interface AppServices {
  settings: Settings;
  logger: Logger;
  /** Prometheus figures served at /metrics. */
  metrics: Registry;
  db: Db;
  blobs: BlobStore;
  tokens: TokenService;
  runtimeConfig: RuntimeConfig;
  /** The current settings' catalog (admin changes apply without a restart). */
  catalog: CatalogView;
  files: FileService;
  assets: AssetService;
  /** Task events between the parts of this process (and every instance, with Redis). */
  bus: EventBus;
  /** Redis as this instance reaches it, with REDIS_URL (GET /healthz pings it). */
  redis: Pick<RedisEventBus, 'ping'> | undefined;
  tasks: TaskService;
  /** The event streams of tasks (GET /v1/tasks/:taskId/events). */
  taskEvents: TaskEventStreams;
  generations: GenerationService;
  /** One service per modality: the routes and the agent's tools submit through them. */
  images: ImageService;
  video: VideoService;
  audio: AudioService;
  digitalHumanGenerations: DigitalHumanGenerations;
  mesh3d: Mesh3dService;
  /** Sends the task callback outbox; the admin API reads its delivery history. */
  callbacks: CallbackDispatcher;
  /** Single-use tickets for the realtime gateway's session.authenticate. */
  wsTickets: WsTicketService;
  /** Digital-human resources of POST /v1/digital-human/create. */
  digitalHumans: DigitalHumanService;
  /** Chat completions (POST /v1/chat/completions). */
  chat: ChatService;
  /** The /v1/responses agent, personal skills and knowledge-base agents. */
  agents: AgentServices;
  /** Limits of tokens and users: admission of every API call, settlement, administration. */
  limits: LimitsService;
  /** Idempotency-Key on creating POSTs. */
  idempotency: IdempotencyService;
  /** The usage ledger's queries (usage sums, the requests log, task lists). */
  usage: UsageLedger;
  /** Embeddings (/v1/embeddings, /openai/v1/embeddings). */
  embeddings: EmbeddingService;
  /** Rerank (/v1/rerank). */
  rerank: RerankService;
  /** Transcriptions (/v1/audio/transcriptions, /openai/v1/audio/transcriptions). */
  transcriptions: TranscriptionService;
  /** Speech answered as audio bytes (/v1/audio/speech, /openai/v1/audio/speech). */
  speechAudio: SpeechAudioService;
  /** OpenAI's Responses API (/openai/v1/responses). */
  openaiResponses: OpenAiResponsesService;
  /** OpenAI's Files API (/openai/v1/files): batch inputs and the files batches write. */
  openaiFiles: OpenAiFileService;
  /** OpenAI's Batch API (/openai/v1/batches). */
  batches: BatchService;
  /** Anthropic's Messages API (/anthropic/v1). */
  anthropicMessages: AnthropicMessagesService;
  /** Channels of the providers: their health, and the administrator's disable and enable. */
  routing: ChannelRouter;
  /** The model list of GET /v1/models/list and MCP's list_models. */
  modelList: ModelList;
  /** /mcp and /mcp/<server>: sessions, tools and their permissions. */
  mcp: McpService;
  /** Teams and their members. */
  teams: TeamService;
  /** Console sessions (in the store: every instance knows them). */
  sessions: ConsoleSessions;
  /** The console's OpenID Connect sign-in, when OIDC_ISSUER is set. */
  oidc: OidcSignIn | undefined;
  /** The runtime settings in force (a snapshot swapped whole on each change) and the MCP servers they name. */
  live: LiveConfig;
  /** Providers, channels, models and MCP servers set through the admin API. */
  runtimeSettings: RuntimeSettingsService;
  /** One row per change made through /admin. */
  audit: AuditLog;
}
