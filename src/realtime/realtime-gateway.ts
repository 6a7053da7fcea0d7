import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import type { Logger } from 'pino';
import { WebSocketServer } from 'ws';
import type { AgentRuns } from '../agent/agent-runs.ts';
import type { TokenService } from '../auth/tokens.ts';
import type { EventBus, TaskStatusEvent } from '../storage/event-bus.ts';
import type { TaskService } from '../tasks/task-service.ts';
import { DRAW_CHANNEL, type ServerMessage } from './realtime-protocol.ts';
import { RealtimeSession } from './realtime-session.ts';
import { SessionRegistry } from './session-registry.ts';
import type { WsTicketService } from './ws-ticket-service.ts';

export interface RealtimeGatewayOptions {
  bus: EventBus;
  tokens: Pick<TokenService, 'authenticate'>;
  tasks: Pick<TaskService, 'get' | 'cancel'>;
  /** Where agent.approval answers go: the approvals agent runs wait for. */
  approvals: Pick<AgentRuns, 'answerApproval'>;
  tickets: Pick<WsTicketService, 'redeem'>;
  settings: {
    /** REALTIME_AUTH_REQUIRED: sessions must authenticate before they are ready. */
    realtimeAuthRequired: boolean;
    realtimeHandshakeTimeoutMs: number;
    realtimeHeartbeatMs: number;
  };
  logger: Logger;
}

export interface RealtimeGateway {
  /** Takes over an HTTP upgrade request, whatever its path. */
  handleUpgrade(req: IncomingMessage, socket: Duplex, head: Buffer): void;
  /**
   * An `upgrade` listener for an HTTP server: requests for `path` (any query) go to the
   * gateway, others are answered 404.
   */
  upgradeListener(path: string): (req: IncomingMessage, socket: Duplex, head: Buffer) => void;
  /** Closes every connection (1001) and stops listening for task updates. */
  close(): Promise<void>;
}

/** Commands and task messages are small; anything larger is refused by the WebSocket layer. */
const MAX_MESSAGE_BYTES = 64 * 1024;
/** How long close() waits for clients to answer the close frame before cutting them off. */
const CLOSE_GRACE_MS = 2000;
/** Query values are only compared; an overlong one is refused rather than stored per session. */
const MAX_QUERY_VALUE_LENGTH = 200;
/** Tasks whose newest version is remembered to drop late or repeated updates; the oldest are forgotten first. */
const MAX_TRACKED_TASKS = 100_000;

/** The realtime WebSocket gateway over the `ws` package, fed by the bus's task updates. */
export function createRealtimeGateway(opts: RealtimeGatewayOptions): RealtimeGateway {
  const logger = opts.logger;
  const wss = new WebSocketServer({ noServer: true, clientTracking: false, maxPayload: MAX_MESSAGE_BYTES });
  const registry = new SessionRegistry<RealtimeSession>();
  const sessions = new Set<RealtimeSession>();
  let closing = false;
  let allClosed: (() => void) | undefined;

  const sessionDeps = {
    tokens: opts.tokens,
    tickets: opts.tickets,
    tasks: opts.tasks,
    approvals: opts.approvals,
    registry,
    authRequired: opts.settings.realtimeAuthRequired,
    handshakeTimeoutMs: opts.settings.realtimeHandshakeTimeoutMs,
    logger,
    onClosed(session: RealtimeSession) {
      sessions.delete(session);
      if (sessions.size === 0) allClosed?.();
    },
  };

  // Updates of one task can arrive out of order or twice when several instances publish them.
  const newestVersions = new Map<string, number>();
  const isStale = (event: TaskStatusEvent): boolean => {
    const seen = newestVersions.get(event.taskId);
    if (seen !== undefined && event.version <= seen) return true;
    newestVersions.delete(event.taskId); // re-inserted last: recently updated tasks are kept longest
    newestVersions.set(event.taskId, event.version);
    if (newestVersions.size > MAX_TRACKED_TASKS) newestVersions.delete(newestVersions.keys().next().value!);
    return false;
  };

  // One subscription for the whole gateway; with Redis the bus already carries other instances' updates.
  const unsubscribe = opts.bus.subscribe('task.status', (event: TaskStatusEvent) => {
    if (isStale(event)) return;
    const recipients = registry.recipientsOf(event);
    if (recipients.size === 0) return;
    // Serialized once for every recipient.
    const text = JSON.stringify({ type: 'task.status', taskId: event.taskId, data: event.record } satisfies ServerMessage);
    for (const session of recipients) session.deliverTaskStatus(event, text);
  });

  // Revocation is rare; looking through every session is cheaper than another index.
  const unsubscribeRevoked = opts.bus.subscribe('token.revoked', ({ tokenId }) => {
    for (const session of sessions) session.tokenRevoked(tokenId);
  });

  const heartbeat = setInterval(() => {
    for (const session of sessions) session.heartbeat();
  }, opts.settings.realtimeHeartbeatMs);
  heartbeat.unref();

  const handleUpgrade = (req: IncomingMessage, socket: Duplex, head: Buffer): void => {
    if (closing) {
      refuseUpgrade(socket, 503, 'Service Unavailable');
      return;
    }
    const query = new URL(req.url ?? '/', 'http://localhost').searchParams;
    const channel = query.get('channel') || DRAW_CHANNEL;
    const clientId = query.get('client_id') || null;
    if (channel.length > MAX_QUERY_VALUE_LENGTH || (clientId?.length ?? 0) > MAX_QUERY_VALUE_LENGTH) {
      refuseUpgrade(socket, 400, 'Bad Request');
      return;
    }
    wss.handleUpgrade(req, socket, head, (ws) => {
      // The upgrade may complete after close() began; such a connection is closed at once.
      if (closing) ws.close(1001, 'server shutting down');
      else sessions.add(new RealtimeSession(ws, channel, clientId, sessionDeps));
    });
  };

  return {
    handleUpgrade,
    upgradeListener(path) {
      return (req, socket, head) => {
        const pathname = new URL(req.url ?? '/', 'http://localhost').pathname;
        if (pathname === path || pathname === `${path}/`) handleUpgrade(req, socket, head);
        else refuseUpgrade(socket, 404, 'Not Found');
      };
    },
    async close() {
      if (closing) return;
      closing = true;
      clearInterval(heartbeat);
      unsubscribe();
      unsubscribeRevoked();
      if (sessions.size > 0) {
        const done = new Promise<void>((resolve) => {
          allClosed = resolve;
        });
        for (const session of sessions) session.close(1001, 'server shutting down');
        const grace = setTimeout(() => {
          logger.warn({ open: sessions.size }, 'realtime clients did not answer the close; cutting them off');
          for (const session of sessions) session.terminate();
        }, CLOSE_GRACE_MS);
        await done;
        clearTimeout(grace);
      }
      await new Promise<void>((resolve) => wss.close(() => resolve()));
    },
  };
}

/** Answers an upgrade request that will not become a WebSocket and closes the socket. */
function refuseUpgrade(socket: Duplex, status: number, text: string): void {
  socket.end(`HTTP/1.1 ${status} ${text}\r\nConnection: close\r\nContent-Length: 0\r\n\r\n`);
}
