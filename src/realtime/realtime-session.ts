import type { Logger } from 'pino';
import WebSocket, { type RawData } from 'ws';
import type { AgentRuns } from '../agent/agent-runs.ts';
import type { TokenService } from '../auth/tokens.ts';
import { ApiError } from '../core/errors.ts';
import { newId, newSecret } from '../core/ids.ts';
import { isTerminal } from '../core/task-state.ts';
import type { TaskStatusEvent } from '../storage/event-bus.ts';
import { statusRecordOf } from '../tasks/task-record.ts';
import type { TaskService } from '../tasks/task-service.ts';
import { AUTH_METHODS, CLOSE_CODES, PROTOCOL_VERSION, validators, type HandshakeCloseCode, type ServerMessage, type SessionAuthenticate } from './realtime-protocol.ts';
import type { SessionRegistry } from './session-registry.ts';
import type { WsTicketService } from './ws-ticket-service.ts';

/** Tasks one session may follow at once with task.subscribe. */
const MAX_SUBSCRIPTIONS = 1000;
/** A client this far behind in reading is cut off rather than buffered for without bound. */
const MAX_BUFFERED_BYTES = 8 * 1024 * 1024;

const BEARER = /^Bearer\s+(\S+)\s*$/i;

/** WebSocket close reasons of the handshake failures (the session.error message says more). */
const CLOSE_REASONS: Record<HandshakeCloseCode, string> = {
  [CLOSE_CODES.badMessage]: 'bad message',
  [CLOSE_CODES.badCredential]: 'bad credential',
  [CLOSE_CODES.handshakeTimeout]: 'handshake timeout',
};

export interface RealtimeSessionDeps {
  tokens: Pick<TokenService, 'authenticate'>;
  tickets: Pick<WsTicketService, 'redeem'>;
  tasks: Pick<TaskService, 'get' | 'cancel'>;
  approvals: Pick<AgentRuns, 'answerApproval'>;
  registry: SessionRegistry<RealtimeSession>;
  authRequired: boolean;
  handshakeTimeoutMs: number;
  logger: Logger;
  /** Called once, when the connection has closed. */
  onClosed(session: RealtimeSession): void;
}

type Phase = 'challenged' | 'initialized' | 'authenticating' | 'ready' | 'closed';

/** A task this session follows through task.subscribe. */
interface Subscription {
  /** Task version of the newest record sent to this session; older updates are dropped. */
  version: number;
  /** Snapshot reads in flight; while any is, updates are held so none overtakes the snapshot. */
  reads: number;
  held: { event: TaskStatusEvent; text: string }[];
}

/** A command refused for a reason the client can act on. */
class CommandRejected extends Error {
  readonly reason: string;

  constructor(
    reason: string,
    message: string,
  ) {
    super(message);
    this.reason = reason;
  }
}

/** Something to do once command.accepted is out, e.g. sending the record a subscription starts with. */
type AfterAccepted = (() => void) | undefined;

/**
 * One WebSocket connection: the handshake (challenge, initialize,
 * authenticate, ready), then text ping/pong, commands and task pushes.
 */
export class RealtimeSession {
  readonly id = newId('ses');
  /** Cleared by every heartbeat ping and set again by the client's pong. */
  private alive = true;
  private phase: Phase = 'challenged';
  private userId: string | undefined;
  /** The API token the session authenticated with (directly or through a ticket). */
  private tokenId: string | undefined;
  private readonly subscriptions = new Map<string, Subscription>();
  private readonly handshakeTimer: NodeJS.Timeout;

  private readonly ws: WebSocket;
  readonly channel: string;
  readonly clientId: string | null;
  private readonly deps: RealtimeSessionDeps;

  constructor(
    ws: WebSocket,
    channel: string,
    clientId: string | null,
    deps: RealtimeSessionDeps,
  ) {
    this.ws = ws;
    this.channel = channel;
    this.clientId = clientId;
    this.deps = deps;
    ws.on('message', (data, isBinary) => this.onMessage(data, isBinary));
    ws.on('pong', () => {
      this.alive = true;
    });
    ws.on('error', (err) => deps.logger.debug({ err, sessionId: this.id }, 'realtime connection error'));
    ws.on('close', () => this.onClose());
    this.handshakeTimer = setTimeout(
      () => this.fail(CLOSE_CODES.handshakeTimeout, `the handshake did not finish within ${deps.handshakeTimeoutMs} ms`),
      deps.handshakeTimeoutMs,
    );
    this.send({
      type: 'session.challenge',
      sessionId: this.id,
      authRequired: deps.authRequired,
      methods: AUTH_METHODS,
      challenge: newSecret(16),
      timeoutMs: deps.handshakeTimeoutMs,
    });
  }

  /** Drops a connection that did not answer the previous ping, else pings it again. */
  heartbeat(): void {
    if (!this.alive) {
      this.deps.logger.debug({ sessionId: this.id }, 'realtime connection missed a heartbeat');
      this.ws.terminate();
      return;
    }
    this.alive = false;
    this.ws.ping();
  }

  /** Sends a task update (`text` is its serialized push), unless it is older than one already sent. */
  deliverTaskStatus(event: TaskStatusEvent, text: string): void {
    const sub = this.subscriptions.get(event.taskId);
    if (!sub) {
      this.sendText(text);
      return;
    }
    if (sub.reads > 0) sub.held.push({ event, text });
    else this.advance(event.taskId, sub, event.version, event.status, text);
  }

  /** Closes the connection; the session ends when the close completes. */
  close(code: number, reason: string): void {
    this.ws.close(code, reason);
  }

  /** Ends a connection that never closes on its own. */
  terminate(): void {
    this.ws.terminate();
  }

  private onMessage(data: RawData, isBinary: boolean): void {
    if (this.phase === 'closed') return;
    // The server keeps the default binaryType, so every message arrives as one Buffer.
    const text = isBinary ? undefined : (data as Buffer).toString('utf8');
    if (text === 'ping') {
      this.sendText('pong');
      return;
    }
    if (this.phase === 'ready') void this.runCommand(text);
    else this.handshakeStep(text);
  }

  private handshakeStep(text: string | undefined): void {
    const message = parseJson(text);
    if (!isObject(message)) {
      this.fail(CLOSE_CODES.badMessage, 'expected a JSON object');
      return;
    }
    const type = message.type;
    if (this.phase === 'challenged' && type === 'session.initialize') {
      if (!validators.sessionInitialize.Check(message)) {
        this.fail(CLOSE_CODES.badMessage, 'session.initialize needs protocolVersion (string) and client (string)');
      } else if (message.protocolVersion !== PROTOCOL_VERSION) {
        this.fail(CLOSE_CODES.badMessage, `unknown protocolVersion "${message.protocolVersion}"; this gateway speaks ${PROTOCOL_VERSION}`);
      } else {
        this.send({ type: 'session.initialized', authRequired: this.deps.authRequired });
        if (this.deps.authRequired) this.phase = 'initialized';
        else this.becomeReady(undefined);
      }
      return;
    }
    if (this.phase === 'initialized' && type === 'session.authenticate') {
      if (!validators.sessionAuthenticate.Check(message)) {
        this.fail(CLOSE_CODES.badMessage, 'session.authenticate needs method (string) and credential (string)');
        return;
      }
      this.phase = 'authenticating';
      this.authenticate(message).catch((err: unknown) => {
        this.deps.logger.error({ err, sessionId: this.id }, 'realtime authentication failed');
        this.phase = 'closed';
        this.ws.close(1011, 'internal error');
      });
      return;
    }
    const expected = this.phase === 'challenged' ? 'session.initialize' : this.phase === 'initialized' ? 'session.authenticate' : 'nothing until session.authenticated';
    this.fail(CLOSE_CODES.badMessage, `${typeof type === 'string' ? type : 'a message without type'} is out of order: expected ${expected}`);
  }

  private async authenticate(message: SessionAuthenticate): Promise<void> {
    let who: { userId: string; tokenId: string } | undefined;
    let refusal: string;
    if (message.method === 'bearer') {
      const token = BEARER.exec(message.credential)?.[1];
      who = token ? await this.deps.tokens.authenticate(token) : undefined;
      refusal = 'unknown or revoked token (credential: "Bearer <API token>")';
    } else if (message.method === 'ws_ticket') {
      who = await this.deps.tickets.redeem(message.credential.trim());
      refusal = 'unknown, used or expired ticket';
    } else {
      refusal = `unknown method "${message.method}"; use ${AUTH_METHODS.join(' or ')}`;
    }
    if (this.phase !== 'authenticating') return; // timed out or closed meanwhile
    if (who === undefined) {
      this.fail(CLOSE_CODES.badCredential, refusal);
      return;
    }
    this.tokenId = who.tokenId;
    this.send({ type: 'session.authenticated' });
    this.becomeReady(who.userId);
  }

  /** Ends the session when it was opened with the revoked token. */
  tokenRevoked(tokenId: string): void {
    if (this.tokenId === tokenId) this.fail(CLOSE_CODES.badCredential, 'the token of this session was revoked');
  }

  private becomeReady(userId: string | undefined): void {
    clearTimeout(this.handshakeTimer);
    this.phase = 'ready';
    this.userId = userId;
    if (userId !== undefined) this.deps.registry.add(userId, this);
    this.send({ type: 'session.ready', sessionId: this.id, welcome: { channel: this.channel, client_id: this.clientId } });
  }

  /** Sends session.error and closes with the handshake's close code. */
  private fail(code: HandshakeCloseCode, message: string): void {
    if (this.phase === 'closed') return;
    this.phase = 'closed';
    clearTimeout(this.handshakeTimer);
    this.send({ type: 'session.error', code, message });
    this.ws.close(code, CLOSE_REASONS[code]);
  }

  private async runCommand(text: string | undefined): Promise<void> {
    const message = parseJson(text);
    if (message === undefined) {
      this.reject(null, 'invalid_json', 'a command is a JSON object');
      return;
    }
    if (isObject(message) && typeof message.type === 'string' && message.type.startsWith('session.')) {
      this.fail(CLOSE_CODES.badMessage, `${message.type} is out of order: the session is ready`);
      return;
    }
    const eventName = isObject(message) && typeof message.eventName === 'string' ? message.eventName : null;
    if (!validators.command.Check(message)) {
      this.reject(eventName, 'invalid_command', 'expected {messageType: "command", eventName (string), payload (object)}');
      return;
    }
    if (this.userId === undefined) {
      this.reject(message.eventName, 'unauthenticated', 'commands need an authenticated session');
      return;
    }
    try {
      const afterAccepted = await this.execute(this.userId, message.eventName, message.payload);
      this.send({ type: 'command.accepted', eventName: message.eventName });
      afterAccepted?.();
    } catch (err) {
      if (err instanceof CommandRejected || err instanceof ApiError) {
        this.reject(message.eventName, err instanceof ApiError ? err.code : err.reason, err.message);
      } else {
        this.deps.logger.error({ err, sessionId: this.id, eventName: message.eventName }, 'realtime command failed');
        this.reject(message.eventName, 'internal_error', 'the command failed; try again');
      }
    }
  }

  private async execute(userId: string, eventName: string, payload: Record<string, unknown>): Promise<AfterAccepted> {
    switch (eventName) {
      case 'task.subscribe':
        if (!validators.taskRef.Check(payload)) throw invalidPayload('{taskId: string}');
        return this.subscribe(userId, payload.taskId);
      case 'task.cancel':
        if (!validators.taskRef.Check(payload)) throw invalidPayload('{taskId: string}');
        await this.deps.tasks.cancel(userId, payload.taskId);
        return undefined;
      case 'agent.approval':
        if (!validators.agentApproval.Check(payload)) throw invalidPayload('{taskId: string, approved: boolean}');
        await this.answerApproval(userId, payload.taskId, payload.approved);
        return undefined;
      default:
        throw new CommandRejected('unknown_event', `unknown eventName "${eventName}"; known: task.subscribe, task.cancel, agent.approval`);
    }
  }

  /** Hands the answer to the run waiting for it; rejected unless one of the user's runs waits for this approval now. */
  private async answerApproval(userId: string, taskId: string, approved: boolean): Promise<void> {
    const answer = await this.deps.approvals.answerApproval(userId, taskId, approved);
    if (answer === 'settled') throw new CommandRejected('not_awaiting_approval', `${taskId} no longer waits for an approval: it was answered or timed out`);
    if (answer === 'unknown') {
      // Not an approval: one of the user's generation tasks, which never waits for one, or else nothing (task_not_found).
      await this.deps.tasks.get(userId, taskId);
      throw new CommandRejected('not_awaiting_approval', `task ${taskId} does not wait for an approval`);
    }
  }

  /**
   * Follows one of the user's tasks. The subscription is in place before the task is read, and
   * updates arriving during the read are held, so the client gets command.accepted, then the
   * current record, then only newer updates: nothing lost, nothing going backwards.
   */
  private async subscribe(userId: string, taskId: string): Promise<AfterAccepted> {
    let sub = this.subscriptions.get(taskId);
    if (!sub) {
      if (this.subscriptions.size >= MAX_SUBSCRIPTIONS) throw new CommandRejected('too_many_subscriptions', `a session follows at most ${MAX_SUBSCRIPTIONS} tasks`);
      sub = { version: 0, reads: 0, held: [] };
      this.subscriptions.set(taskId, sub);
      this.deps.registry.subscribe(taskId, this);
    }
    const subscription = sub;
    subscription.reads++;
    try {
      const row = await this.deps.tasks.get(userId, taskId);
      return () => {
        subscription.reads--;
        // A repeated subscribe gets the current record again; only an older one is held back.
        if (row.version >= subscription.version) {
          subscription.version = row.version;
          this.send({ type: 'task.status', taskId, data: statusRecordOf(row) });
        }
        this.releaseHeld(taskId, subscription);
        if (isTerminal(row.status)) this.dropSubscription(taskId);
      };
    } catch (err) {
      subscription.reads--;
      this.releaseHeld(taskId, subscription);
      if (subscription.version === 0) this.dropSubscription(taskId);
      throw err;
    }
  }

  /** Sends the updates held during snapshot reads, once none is in flight. */
  private releaseHeld(taskId: string, sub: Subscription): void {
    if (sub.reads > 0) return;
    const held = sub.held;
    sub.held = [];
    for (const { event, text } of held) this.advance(taskId, sub, event.version, event.status, text);
  }

  private advance(taskId: string, sub: Subscription, version: number, status: string, text: string): void {
    if (version <= sub.version) return;
    sub.version = version;
    this.sendText(text);
    // Nothing follows an end; the owner's draw sessions still see the task's later pushes, if any.
    if (isTerminal(status)) this.dropSubscription(taskId);
  }

  private dropSubscription(taskId: string): void {
    const sub = this.subscriptions.get(taskId);
    if (!sub || sub.reads > 0) return;
    this.subscriptions.delete(taskId);
    this.deps.registry.unsubscribe(taskId, this);
  }

  private reject(eventName: string | null, reason: string, message: string): void {
    this.send({ type: 'command.rejected', eventName, reason, message });
  }

  private onClose(): void {
    this.phase = 'closed';
    clearTimeout(this.handshakeTimer);
    if (this.userId !== undefined) this.deps.registry.remove(this.userId, this, this.subscriptions.keys());
    this.subscriptions.clear();
    this.deps.onClosed(this);
  }

  private send(message: ServerMessage): void {
    this.sendText(JSON.stringify(message));
  }

  private sendText(text: string): void {
    if (this.ws.readyState !== WebSocket.OPEN) return;
    if (this.ws.bufferedAmount > MAX_BUFFERED_BYTES) {
      this.deps.logger.warn({ sessionId: this.id, bufferedBytes: this.ws.bufferedAmount }, 'realtime client reads too slowly; dropping it');
      this.ws.terminate();
      return;
    }
    this.ws.send(text);
  }
}

function parseJson(text: string | undefined): unknown {
  if (text === undefined) return undefined;
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return undefined;
  }
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function invalidPayload(shape: string): CommandRejected {
  return new CommandRejected('invalid_payload', `payload must be ${shape}`);
}
