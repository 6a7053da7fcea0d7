import type { Logger } from 'pino';
import type { Settings } from '../config/settings.ts';
import { ApiError } from '../core/errors.ts';
import type { ChatService } from '../chat/chat-service.ts';
import type { Db } from '../storage/db.ts';
import { AgentsRepo } from '../storage/repos/agents-repo.ts';
import type { ConversationsRepo } from '../storage/repos/conversations-repo.ts';
import { SkillsRepo } from '../storage/repos/skills-repo.ts';
import type { EventBus } from '../storage/event-bus.ts';
import type { TaskService } from '../tasks/task-service.ts';
import { AgentRuns } from './agent-runs.ts';
import { AgentService, type AgentSettings } from './agent-service.ts';
import { GenerationTools, type ToolServices } from './agent-tools.ts';
import { KnowledgeService } from './knowledge-service.ts';
import { SkillsService } from './skills-service.ts';
import type { McpService } from '../mcp/mcp-service.ts';

/** GENGATE_CONFIG `agent` defaults: video costs the most, so it waits for the user's approval. */
export const AGENT_DEFAULTS: AgentSettings = {
  approvalTools: ['generate_video'],
  approvalTimeoutMs: 5 * 60_000,
  maxSteps: 8,
};

/** The /v1/responses agent, personal skills and knowledge-base agents. */
export interface AgentServices {
  responses: AgentService;
  skills: SkillsService;
  knowledge: KnowledgeService;
  /** The approvals runs wait for: agent.approval answers from the realtime gateway go here. */
  approvals: Pick<AgentRuns, 'answerApproval'>;
  /** Ends the running streams of this instance (shutdown), so the HTTP server can close. */
  close(): void;
}

export interface AgentServicesDeps {
  db: Db;
  bus: EventBus;
  tasks: TaskService;
  /** The modality services the generation tools submit through. */
  modalities: ToolServices;
  chat: ChatService;
  conversations: ConversationsRepo;
  settings: Settings;
  /** Runs the `mcp` tools of /v1/responses requests. */
  mcp: McpService;
  logger: Logger;
}

export async function createAgentServices(deps: AgentServicesDeps): Promise<AgentServices> {
  const { settings } = deps;
  const configured = settings.config.agent ?? {};
  const agentsRepo = new AgentsRepo(deps.db);
  const runs = new AgentRuns({ repo: agentsRepo, bus: deps.bus, instanceId: settings.instanceId });
  await runs.clearStale();
  const skills = new SkillsService(new SkillsRepo(deps.db));
  const knowledge = new KnowledgeService(agentsRepo);
  const responses = new AgentService({
    chat: deps.chat,
    conversations: deps.conversations,
    skills,
    knowledge,
    tools: new GenerationTools({ services: deps.modalities, tasks: deps.tasks, waitMs: settings.syncTimeoutMs }),
    runs,
    mcp: deps.mcp,
    approvalTools: configured.approval_tools ?? AGENT_DEFAULTS.approvalTools,
    approvalTimeoutMs: configured.approval_timeout_ms ?? AGENT_DEFAULTS.approvalTimeoutMs,
    maxSteps: configured.max_steps ?? AGENT_DEFAULTS.maxSteps,
    logger: deps.logger,
  });
  return {
    responses,
    skills,
    knowledge,
    approvals: runs,
    close: () => runs.close(new ApiError('internal_error', 'the server is shutting down')),
  };
}
