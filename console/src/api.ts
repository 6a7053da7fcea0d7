/** The signed-in token, kept in this browser only. */
const TOKEN_KEY = 'gengate.token';

export const session = {
  token: (): string | null => localStorage.getItem(TOKEN_KEY),
  set: (token: string) => localStorage.setItem(TOKEN_KEY, token),
  clear: () => localStorage.removeItem(TOKEN_KEY),
};

export class ApiFailure extends Error {
  constructor(readonly status: number, readonly code: string, message: string) {
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
    throw new ApiFailure(res.status, String(error.code ?? res.status), String(error.message ?? res.statusText));
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
