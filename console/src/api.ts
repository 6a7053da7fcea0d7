/** The signed-in token, kept in this browser only. */
const TOKEN_KEY = 'gengate.token';

export const session = {
  token: (): string | null => localStorage.getItem(TOKEN_KEY),
  set: (token: string) => localStorage.setItem(TOKEN_KEY, token),
  clear: () => localStorage.removeItem(TOKEN_KEY),
};

export class ApiFailure extends Error {
  constructor(readonly status: number, readonly code: string, message: string, readonly param: string | null = null) {
    super(message);
  }
}

/** The CSRF value of a console session (its cookie is readable on purpose), sent on every change. */
function csrfToken(): string | undefined {
  return document.cookie.split('; ').find((c) => c.startsWith('gengate_csrf='))?.slice('gengate_csrf='.length);
}

/** A call to the gateway with the signed-in token, or the session's cookies; a JSON body in, a JSON answer out. */
export async function api<T = any>(path: string, init: { method?: string; json?: unknown; headers?: Record<string, string>; token?: string } = {}): Promise<T> {
  const headers: Record<string, string> = { ...init.headers };
  const token = init.token ?? session.token();
  const method = init.method ?? 'GET';
  if (token) headers.authorization = `Bearer ${token}`;
  else if (method !== 'GET') {
    const csrf = csrfToken();
    if (csrf) headers['x-csrf-token'] = decodeURIComponent(csrf);
  }
  if (init.json !== undefined) headers['content-type'] = 'application/json';
  const res = await fetch(path, { method, headers, body: init.json === undefined ? undefined : JSON.stringify(init.json) });
  if (res.status === 204) return undefined as T;
  const body = await res.json().catch(() => ({}));
  if (!res.ok) {
    const error = body?.error ?? {};
    throw new ApiFailure(res.status, String(error.code ?? res.status), String(error.message ?? res.statusText), typeof error.param === 'string' ? error.param : null);
  }
  return body as T;
}

/** Query string of the defined values. */
export function query(values: Record<string, string | number | undefined | null>): string {
  const params = new URLSearchParams();
  for (const [k, v] of Object.entries(values)) if (v !== undefined && v !== null && v !== '') params.set(k, String(v));
  const text = params.toString();
  return text ? `?${text}` : '';
}

export type TeamRole = 'admin' | 'member' | 'viewer';

/** Who the console's caller is (GET /console/auth/me): a session, the admin token or an API token. */
export interface Identity {
  user_id: string;
  admin: boolean;
  via: 'admin_token' | 'session' | 'api_token';
  teams: { id: string; name: string; role: TeamRole }[];
}

/** Who the token (or, without one, the session cookie) is; undefined when neither signs in. */
export async function whoAmI(token?: string): Promise<Identity | undefined> {
  try {
    return await api<Identity>('/console/auth/me', token ? { token } : {});
  } catch (err) {
    if (!token && err instanceof ApiFailure && err.status === 401) return undefined;
    throw err;
  }
}

/** One event of a task's event stream. */
export interface StreamEvent {
  id: string;
  event: string;
  data: any;
}

/**
 * Reads a server-sent-events route with the signed-in token (fetch streaming: EventSource
 * cannot send the Authorization header), calling `onEvent` for each event until the stream
 * ends or `signal` aborts. `lastEventId` resumes after that event.
 */
export async function streamEvents(path: string, onEvent: (event: StreamEvent) => void, opts: { lastEventId?: string; signal?: AbortSignal } = {}): Promise<void> {
  const headers: Record<string, string> = { accept: 'text/event-stream' };
  const token = session.token();
  if (token) headers.authorization = `Bearer ${token}`;
  if (opts.lastEventId !== undefined) headers['last-event-id'] = opts.lastEventId;
  const res = await fetch(path, { headers, signal: opts.signal });
  if (!res.ok || !res.body) {
    const error = (await res.json().catch(() => ({})))?.error ?? {};
    throw new ApiFailure(res.status, String(error.code ?? res.status), String(error.message ?? res.statusText));
  }
  const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = '';
  for (;;) {
    const { done, value } = await reader.read();
    if (done) return;
    buffer += value;
    // Events end with a blank line; comment lines (":") only keep the connection open.
    for (let end = buffer.indexOf('\n\n'); end >= 0; end = buffer.indexOf('\n\n')) {
      const block = buffer.slice(0, end);
      buffer = buffer.slice(end + 2);
      const fields: Record<string, string> = {};
      for (const line of block.split('\n')) {
        if (line.startsWith(':')) continue;
        const colon = line.indexOf(':');
        if (colon < 0) continue;
        const name = line.slice(0, colon);
        const text = line.slice(colon + 1).replace(/^ /, '');
        fields[name] = name === 'data' && fields.data !== undefined ? `${fields.data}\n${text}` : text;
      }
      if (fields.data !== undefined) onEvent({ id: fields.id ?? '', event: fields.event ?? 'message', data: JSON.parse(fields.data) });
    }
  }
}
