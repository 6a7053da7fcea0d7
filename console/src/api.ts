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

/** A call to the gateway with the signed-in token; a JSON body in, a JSON answer out. */
export async function api<T = any>(path: string, init: { method?: string; json?: unknown; headers?: Record<string, string>; token?: string } = {}): Promise<T> {
  const headers: Record<string, string> = { ...init.headers };
  const token = init.token ?? session.token();
  if (token) headers.authorization = `Bearer ${token}`;
  if (init.json !== undefined) headers['content-type'] = 'application/json';
  const res = await fetch(path, { method: init.method ?? 'GET', headers, body: init.json === undefined ? undefined : JSON.stringify(init.json) });
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

/** Who the token is: the admin token answers /admin routes, an API token gets 403 there. */
export async function whoAmI(token: string): Promise<'admin' | 'user'> {
  try {
    await api('/admin/config', { token });
    return 'admin';
  } catch (err) {
    if (err instanceof ApiFailure && err.status === 403) return 'user';
    throw err;
  }
}
