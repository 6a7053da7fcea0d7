import { Type, type Static } from 'typebox';
import { Compile } from 'typebox/compile';
import type { TaskStatusRecord } from '../tasks/task-record.ts';

/** The one protocolVersion the handshake accepts (Versioning). */
export const PROTOCOL_VERSION = '1.0';

export const AUTH_METHODS = ['bearer', 'ws_ticket'] as const;

/** Close codes of a failed handshake; session.error carries the same number as `code`. */
export const CLOSE_CODES = {
  /** A message out of order, malformed, or with an unknown protocolVersion. */
  badMessage: 4400,
  /** An unknown token, a used or expired ticket, an unknown method. */
  badCredential: 4401,
  /** The handshake did not finish within session.challenge.timeoutMs. */
  handshakeTimeout: 4408,
} as const;
export type HandshakeCloseCode = (typeof CLOSE_CODES)[keyof typeof CLOSE_CODES];

/** The channel whose sessions get task pushes. */
export const DRAW_CHANNEL = 'draw';

const SessionInitialize = Type.Object({
  type: Type.Literal('session.initialize'),
  protocolVersion: Type.String(),
  client: Type.Optional(Type.String()),
});
export type SessionInitialize = Static<typeof SessionInitialize>;

const SessionAuthenticate = Type.Object({
  type: Type.Literal('session.authenticate'),
  method: Type.String(),
  credential: Type.String(),
});
export type SessionAuthenticate = Static<typeof SessionAuthenticate>;

const CommandMessage = Type.Object({
  messageType: Type.Literal('command'),
  eventName: Type.String({ minLength: 1, maxLength: 100 }),
  payload: Type.Record(Type.String(), Type.Unknown()),
});
export type CommandMessage = Static<typeof CommandMessage>;

const TaskId = Type.String({ minLength: 1, maxLength: 200 });

const TaskRef = Type.Object({ taskId: TaskId });
export type TaskRef = Static<typeof TaskRef>;

const AgentApproval = Type.Object({ taskId: TaskId, approved: Type.Boolean() });
export type AgentApproval = Static<typeof AgentApproval>;

/** Compiled checks of what clients send; the socket is an edge, so everything is checked. */
export const validators = {
  sessionInitialize: Compile(SessionInitialize),
  sessionAuthenticate: Compile(SessionAuthenticate),
  command: Compile(CommandMessage),
  taskRef: Compile(TaskRef),
  agentApproval: Compile(AgentApproval),
};

/** Messages the server sends. */
export type ServerMessage =
  | {
      type: 'session.challenge';
      sessionId: string;
      authRequired: boolean;
      methods: readonly string[];
      challenge: string;
      timeoutMs: number;
    }
  | { type: 'session.initialized'; authRequired: boolean }
  | { type: 'session.authenticated' }
  | { type: 'session.ready'; sessionId: string; welcome: { channel: string; client_id: string | null } }
  | { type: 'session.error'; code: HandshakeCloseCode; message: string }
  | { type: 'command.accepted'; eventName: string }
  | { type: 'command.rejected'; eventName: string | null; reason: string; message: string }
  | { type: 'task.status'; taskId: string; data: TaskStatusRecord };
