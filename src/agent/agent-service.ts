import type { Logger } from 'pino';
import type { LiveModel } from '../catalog/catalog.ts';
import type { ChatService } from '../chat/chat-service.ts';
import { StreamedReply } from '../chat/streamed-reply.ts';
import { ApiError } from '../core/errors.ts';
import { newId } from '../core/ids.ts';
import type { ChatChunk, ChatMessage, ChatModel, ChatTool, ChatUsage, ServedRoute } from '../providers/spec.ts';
import type { ConversationsRepo } from '../storage/repos/conversations-repo.ts';
import type { AgentRow } from '../storage/schema.ts';
import {
  errorEvent, messageOutputItem, ResponseEvents, runItemEvent, toolApprovalItem, toolCallItem, toolCallOutputItem, withDetails,
  type AgentEvent, type FunctionCall, type RunItem, type RunUsage,
} from './agent-events.ts';
import { imageParts, inputMessages, type ResponsesInput } from './agent-input.ts';
import type { AgentRuns, RunHandle } from './agent-runs.ts';
import type { GenerationTools } from './agent-tools.ts';
import type { KnowledgeService, PassageHit } from './knowledge-service.ts';
import { skillsPrompt, type SkillsService } from './skills-service.ts';
import type { Principal } from '../auth/tokens.ts';
import type { McpService } from '../mcp/mcp-service.ts';
import { McpToolset } from '../mcp/request-tools.ts';

/** The agent's name in run items when no agent was named. */
const DEFAULT_AGENT_NAME = 'Assistant';

export interface AgentSettings {
  /** Tools that wait for the user's agent.approval before they run. */
  approvalTools: readonly string[];
  /** How long a tool waits for approval; then it counts as rejected. */
  approvalTimeoutMs: number;
  /** Model calls per run; the last one is offered no tools, so the run ends with an answer. */
  maxSteps: number;
}

export interface AgentServiceDeps extends AgentSettings {
  /** The model and messages are checked and prepared as for chat completions. */
  chat: ChatService;
  conversations: ConversationsRepo;
  skills: SkillsService;
  knowledge: KnowledgeService;
  tools: GenerationTools;
  runs: AgentRuns;
  /** Runs the request's `mcp` tools. */
  mcp: McpService;
  logger: Logger;
}

/** Everything a run needs, settled (and checked) before its stream starts. */
interface RunPlan {
  ownerId: string;
  requestId: string;
  model: LiveModel;
  chatModel: ChatModel;
  /** What the model is sent first: instructions, skills and passages, the conversation's history, the request's messages. */
  messages: ChatMessage[];
  /** The request's messages as a conversation keeps them. */
  added: ChatMessage[];
  conversationId?: string;
  agent?: AgentRow;
  /** Knowledge-base mode when the agent's documents matched the question. */
  passages: PassageHit[];
  tools: ChatTool[];
  /** The request's MCP tools, listed and connected. */
  mcp: McpToolset | undefined;
}

function textOf(message: ChatMessage | undefined): string {
  if (!message) return '';
  if (typeof message.content === 'string') return message.content;
  return (message.content ?? []).map((part) => (part.type === 'text' ? part.text : '')).join(' ').trim();
}

function knowledgePrompt(agentName: string, passages: readonly PassageHit[]): string {
  const cited = passages.map((passage, i) => `[${i + 1}] ${passage.title}\n${passage.content}`);
  return [`Answer from these passages of the knowledge base "${agentName}" where they cover the question.`, ...cited].join('\n\n');
}

/** Normalisation errors name `messages[…]` as chat does; here the field is `input`. */
function asInputParam(err: unknown): unknown {
  if (!(err instanceof ApiError) || !err.param?.startsWith('messages')) return err;
  const param = `input${err.param.slice('messages'.length)}`;
  return new ApiError(err.code, err.message.replaceAll(err.param, param), param, err.extra, err.headers, err.details);
}

/**
 * POST /v1/responses: the request checked and prepared (model, messages, skills, agent and
 * retrieval), then run as a stream of events (or collected into one body) by AgentRun.
 */
export class AgentService {
  private readonly deps: AgentServiceDeps;

  constructor(deps: AgentServiceDeps) {
    this.deps = deps;
  }

  /**
   * Checks and prepares a request and registers its run, so it can be cancelled from now on.
   * Throws the contract's 400/404/409 errors before anything is streamed.
   */
  async start(input: ResponsesInput, caller: { principal: Principal; requestId: string }): Promise<AgentRun> {
    const { deps } = this;
    const { principal, requestId } = caller;
    const ownerId = principal.userId;
    // Refused before anything runs (400 naming tools[i]…); listed once for the whole run.
    const mcp = McpToolset.named(input.tools) ? await McpToolset.open(deps.mcp, principal, input.tools!) : undefined;
    const sent = inputMessages(input.input, [...imageParts(input.images), ...(input.attachments ?? [])]);
    const [{ model, chatModel, added, messages: sentWithHistory }, skills, agent] = await Promise.all([
      deps.chat.prepare(input.model, sent, ownerId, input.conversationId).catch((err: unknown) => {
        throw asInputParam(err);
      }),
      deps.skills.selected(ownerId, input.skill_options),
      input.agentId !== undefined ? deps.knowledge.agentForRequest(ownerId, input.agentId) : input.useGlobalMainAgent ? deps.knowledge.mainAgent() : undefined,
    ]);
    const question = textOf([...added].reverse().find((m) => m.role === 'user'));
    const passages = agent && question ? await deps.knowledge.retrieve(agent.id, question) : [];

    const system = [
      agent?.instructions ?? '',
      skills.length > 0 ? skillsPrompt(skills) : '',
      passages.length > 0 ? knowledgePrompt(agent!.name, passages) : '',
    ].filter(Boolean).join('\n\n');
    const plan: RunPlan = {
      ownerId,
      requestId,
      model,
      chatModel,
      messages: system ? [{ role: 'system', content: system }, ...sentWithHistory] : sentWithHistory,
      added,
      conversationId: input.conversationId,
      agent,
      passages,
      // Tools go only to models that can call them; the others just answer. A request's MCP
      // tool takes the place of a built-in tool of the same name.
      tools: model.modelTypes.includes('tools_call') ? [...deps.tools.definitions.filter((t) => !mcp?.has(t.function.name)), ...(mcp?.definitions ?? [])] : [],
      mcp,
    };
    try {
      const handle = await deps.runs.start(ownerId, requestId);
      return new AgentRun(plan, handle, deps);
    } catch (err) {
      await mcp?.close();
      throw err;
    }
  }

  async cancel(ownerId: string, requestId: string): Promise<void> {
    if (!(await this.deps.runs.cancel(ownerId, requestId))) throw new ApiError('request_not_found', `no running response with requestId ${requestId}`, 'requestId');
  }
}

/** An output item that is whole at once (an MCP tool listing), as Responses streams items. */
function outputItemEvents(item: { type: string }): AgentEvent[] {
  return [{ type: 'response.output_item.added', item }, { type: 'response.output_item.done', item }];
}

/** Adds up the usage chunks of every model call of a run. */
class UsageTotal {
  /** In the chat shape, cache details included: what the run's ledger row counts. */
  readonly chat = { prompt_tokens: 0, completion_tokens: 0, total_tokens: 0, prompt_tokens_details: { cached_tokens: 0, cache_write_tokens: 0 } } satisfies ChatUsage;

  add(chunk: ChatChunk): void {
    const usage = chunk.usage;
    if (!usage) return;
    this.chat.prompt_tokens += usage.prompt_tokens;
    this.chat.completion_tokens += usage.completion_tokens;
    this.chat.total_tokens += usage.total_tokens;
    this.chat.prompt_tokens_details.cached_tokens += usage.prompt_tokens_details?.cached_tokens ?? 0;
    this.chat.prompt_tokens_details.cache_write_tokens += usage.prompt_tokens_details?.cache_write_tokens ?? 0;
  }

  /** In the Responses API's names. */
  get usage(): RunUsage {
    const { prompt_tokens, completion_tokens, total_tokens, prompt_tokens_details } = this.chat;
    return { input_tokens: prompt_tokens, output_tokens: completion_tokens, total_tokens, cached_tokens: prompt_tokens_details.cached_tokens };
  }
}

/**
 * One run of the agent. Knowledge-base mode (the agent's documents matched) answers once,
 * as `response.*` events. Base mode loops: the model is called with the built-in tools, each
 * call it makes is run (after the user's approval for the tools that need it) and its result
 * handed back, until the model answers without calling a tool.
 */
export class AgentRun {
  readonly mode: 'agent' | 'knowledge';
  private readonly total = new UsageTotal();
  private readonly log: Logger;
  private answer = '';
  private finalItems: unknown[] = [];
  private served: ServedRoute | undefined;

  private readonly plan: RunPlan;
  private readonly handle: RunHandle;
  private readonly deps: AgentServiceDeps;

  constructor(plan: RunPlan, handle: RunHandle, deps: AgentServiceDeps) {
    this.plan = plan;
    this.handle = handle;
    this.deps = deps;
    this.mode = plan.passages.length > 0 ? 'knowledge' : 'agent';
    this.log = deps.logger.child({ request_id: plan.requestId });
  }

  get requestId(): string {
    return this.plan.requestId;
  }

  /** The model, provider and channel of the run's first model call, once it answered. */
  get route(): ServedRoute | undefined {
    return this.served;
  }

  /** The tokens of every model call of the run so far. */
  get usage(): ChatUsage {
    return this.total.chat;
  }

  /** Stops the run (the client went away): the model call and any running tool are aborted. */
  abort(reason: unknown): void {
    this.handle.abort(reason);
  }

  /** Every event of the run for the client, a failure included as events; never throws. */
  async *stream(): AsyncGenerator<AgentEvent> {
    try {
      yield* this.events(true);
    } catch (err) {
      yield errorEvent(this.failure(err));
    } finally {
      await this.plan.mcp?.close();
      await this.handle.finish();
    }
  }

  /** The run collected into one body (stream: false); a failure is thrown as its ApiError. */
  async complete(): Promise<Record<string, unknown>> {
    const output: unknown[] = [];
    try {
      for await (const event of this.events(false)) {
        if (event.type === 'run_item_stream_event' || event.type === 'response.output_item.done') output.push(event.item);
      }
    } catch (err) {
      throw this.failure(err);
    } finally {
      await this.plan.mcp?.close();
      await this.handle.finish();
    }
    return {
      id: newId('resp'),
      object: 'response',
      request_id: this.plan.requestId,
      status: 'completed',
      model: this.plan.model.alias,
      mode: this.mode,
      ...(this.plan.agent ? { agent_id: this.plan.agent.id } : {}),
      output: this.mode === 'knowledge' ? this.finalItems : output,
      output_text: this.answer,
      usage: withDetails(this.total.usage),
    };
  }

  /** What a failure is reported as: the abort's reason once aborted (cancel), else the error. */
  private failure(err: unknown): ApiError {
    const cause = this.handle.signal.aborted ? this.handle.signal.reason : err;
    if (cause instanceof ApiError) return cause;
    this.log.error({ err: cause }, 'agent run failed');
    return new ApiError('internal_error', 'the agent failed');
  }

  private events(interactive: boolean): AsyncGenerator<AgentEvent> {
    return this.mode === 'knowledge' ? this.knowledgeAnswer() : this.agentLoop(interactive);
  }

  /** The model call of one step, its text deltas yielded as they come; answers the assistant message. */
  private async *modelStep(tools: ChatTool[], messages: ChatMessage[], onDelta: (delta: string) => AgentEvent): AsyncGenerator<AgentEvent, ChatMessage> {
    const { chatModel, model } = this.plan;
    const reply = new StreamedReply();
    const params = tools.length > 0 ? { tools, tool_choice: 'auto' as const } : {};
    const chunks = await chatModel.stream({ model, messages, params }, { signal: this.handle.signal, served: (route) => void (this.served ??= route) });
    for await (const chunk of chunks) {
      reply.add(chunk);
      this.total.add(chunk);
      const delta = chunk.choices[0]?.delta.content;
      if (delta) yield onDelta(delta);
    }
    return reply.message();
  }

  private async keepTurn(turn: ChatMessage[]): Promise<void> {
    const { conversationId, ownerId, added } = this.plan;
    if (conversationId !== undefined) await this.deps.conversations.append(ownerId, conversationId, [...added, ...turn]);
  }

  private async *knowledgeAnswer(): AsyncGenerator<AgentEvent> {
    const events = new ResponseEvents({ model: this.plan.model.alias, requestId: this.plan.requestId, agentId: this.plan.agent!.id });
    try {
      yield* events.started();
      const message = yield* this.modelStep([], this.plan.messages, (delta) => events.delta(delta));
      this.answer = textOf(message);
      await this.keepTurn([message]);
      this.finalItems = [events.item()];
      yield* events.completed(this.total.usage);
    } catch (err) {
      const failure = this.failure(err);
      yield* events.failed(failure);
      throw failure;
    }
  }

  private async *agentLoop(interactive: boolean): AsyncGenerator<AgentEvent> {
    const { plan, deps } = this;
    const agent = { name: plan.agent?.name ?? DEFAULT_AGENT_NAME };
    yield { type: 'agent_updated_stream_event', agent, request_id: plan.requestId, ...(plan.conversationId !== undefined ? { conversation_id: plan.conversationId } : {}) };
    const messages = plan.messages.slice();
    const turn: ChatMessage[] = [];
    for (const item of plan.mcp?.listItems ?? []) yield* outputItemEvents(item);
    const rawDelta = (delta: string): AgentEvent => ({ type: 'raw_model_stream_event', data: { type: 'output_text_delta', delta } });
    for (let step = 1; ; step++) {
      const tools = step < deps.maxSteps ? plan.tools : [];
      const message = yield* this.modelStep(tools, messages, rawDelta);
      messages.push(message);
      turn.push(message);
      const text = textOf(message);
      const calls = message.tool_calls ?? [];
      if (text || calls.length === 0) yield runItemEvent(messageOutputItem(text, agent));
      if (calls.length === 0) {
        this.answer = text;
        break;
      }
      for (const call of calls) {
        if (plan.mcp?.has(call.function.name)) {
          const pending = plan.mcp.pending(call.function.name, call.function.arguments);
          yield { type: 'response.output_item.added', item: pending };
          const item = await plan.mcp.call(pending, call.function.name, this.handle.signal);
          yield { type: 'response.output_item.done', item };
          const result: ChatMessage = { role: 'tool', tool_call_id: call.id, content: item.error ?? item.output ?? '' };
          messages.push(result);
          turn.push(result);
          continue;
        }
        const functionCall: FunctionCall = { callId: call.id, name: call.function.name, arguments: call.function.arguments };
        yield runItemEvent(toolCallItem(functionCall, agent));
        const output = yield* this.toolOutput(functionCall, agent, interactive);
        const result: ChatMessage = { role: 'tool', tool_call_id: call.id, content: output };
        messages.push(result);
        turn.push(result);
        yield runItemEvent(toolCallOutputItem(functionCall, output, agent));
      }
    }
    await this.keepTurn(turn);
  }

  /** Runs a tool call, first asking for approval when the tool needs it; answers its output. */
  private async *toolOutput(call: FunctionCall, agent: RunItem['agent'], interactive: boolean): AsyncGenerator<AgentEvent, string> {
    const { plan, deps, handle } = this;
    if (deps.approvalTools.includes(call.name)) {
      if (!interactive) return JSON.stringify({ status: 'rejected', message: `${call.name} needs the user's approval, which only a streamed request can ask for` });
      const approval = await deps.runs.requestApproval(plan.ownerId, plan.requestId);
      yield runItemEvent(toolApprovalItem(call, approval.taskId, agent));
      const outcome = await approval.outcome(deps.approvalTimeoutMs, handle.signal);
      this.log.info({ tool: call.name, taskId: approval.taskId, outcome }, 'tool approval');
      if (outcome !== 'approved') {
        return JSON.stringify({ status: 'rejected', message: outcome === 'timed_out' ? `no approval for ${call.name} came in time` : `the user rejected ${call.name}` });
      }
    }
    return deps.tools.run(call.name, call.arguments, { ownerId: plan.ownerId, requestId: plan.requestId }, handle.signal);
  }
}
