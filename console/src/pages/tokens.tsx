import { useState } from 'react';
import { api } from '../api.ts';
import { useGet, when } from '../hooks.ts';

const LIMIT_FIELDS = ['requests_per_minute', 'tokens_per_minute', 'concurrent_tasks', 'credits'] as const;
type Limits = Partial<Record<(typeof LIMIT_FIELDS)[number], number>> & { credits_period?: string };

function limitsText(limits: Limits): string {
  const parts = Object.entries(limits).map(([k, v]) => `${k}=${v}`);
  return parts.length ? parts.join(', ') : 'none';
}

/** Limits as a form: an empty field removes that limit (null). */
function LimitsForm({ initial, onSave }: { initial: Limits; onSave: (patch: Record<string, number | string | null>) => Promise<void> }) {
  const [values, setValues] = useState<Record<string, string>>(Object.fromEntries([...LIMIT_FIELDS, 'credits_period'].map((k) => [k, initial[k as keyof Limits]?.toString() ?? ''])));
  const [message, setMessage] = useState('');
  const save = async (e: React.FormEvent) => {
    e.preventDefault();
    const patch: Record<string, number | string | null> = {};
    for (const k of LIMIT_FIELDS) patch[k] = values[k] === '' ? null : Number(values[k]);
    patch.credits_period = values.credits_period === '' ? null : values.credits_period;
    try {
      await onSave(patch);
      setMessage('saved');
    } catch (err) {
      setMessage((err as Error).message);
    }
  };
  return (
    <form className="limits" onSubmit={save}>
      {LIMIT_FIELDS.map((k) => <label key={k}>{k}<input type="number" min={0} value={values[k]} onChange={(e) => setValues({ ...values, [k]: e.target.value })} /></label>)}
      <label>credits_period<select value={values.credits_period} onChange={(e) => setValues({ ...values, credits_period: e.target.value })}>{['', 'day', 'month', 'total'].map((p) => <option key={p} value={p}>{p || '—'}</option>)}</select></label>
      <button type="submit">Save limits</button> {message}
    </form>
  );
}

export function Tokens() {
  const { data, error, reload } = useGet<{ data: any[] }>('/admin/tokens');
  const [form, setForm] = useState({ user_id: '', name: '' });
  const [created, setCreated] = useState<{ token: string; user_id: string } | null>(null);
  const [failure, setFailure] = useState('');
  const [editing, setEditing] = useState<string | null>(null);
  const [userId, setUserId] = useState('');
  const user = useGet<{ user_id: string; limits: Limits }>(userId ? `/admin/users/${encodeURIComponent(userId)}/limits` : null);

  const create = async (e: React.FormEvent) => {
    e.preventDefault();
    setFailure('');
    try {
      const t = await api('/admin/tokens', { method: 'POST', json: { user_id: form.user_id, ...(form.name ? { name: form.name } : {}) } });
      setCreated({ token: t.token, user_id: t.user_id });
      reload();
    } catch (err) {
      setFailure((err as Error).message);
    }
  };
  const revoke = async (id: string) => {
    if (!confirm(`Revoke token ${id}?`)) return;
    await api(`/admin/tokens/${encodeURIComponent(id)}`, { method: 'DELETE' });
    reload();
  };

  return (
    <section>
      <h2>Tokens and users</h2>
      <form className="inline" onSubmit={create}>
        <input placeholder="user id" value={form.user_id} onChange={(e) => setForm({ ...form, user_id: e.target.value })} required />
        <input placeholder="name (optional)" value={form.name} onChange={(e) => setForm({ ...form, name: e.target.value })} />
        <button type="submit">Create token</button>
      </form>
      {failure && <p className="error">{failure}</p>}
      {created && (
        <div className="once">
          <p>The token of <b>{created.user_id}</b>. It is shown only now: copy it.</p>
          <code data-testid="new-token">{created.token}</code>
          <button onClick={() => setCreated(null)}>Done</button>
        </div>
      )}
      {error && <p className="error">{error}</p>}
      <table data-testid="tokens-table">
        <thead><tr><th>Id</th><th>User</th><th>Name</th><th>Created</th><th>Limits</th><th></th></tr></thead>
        <tbody>
          {data?.data.map((t) => (
            <tr key={t.id}>
              <td>{t.id}</td><td><button className="link" onClick={() => setUserId(t.user_id)}>{t.user_id}</button></td><td>{t.name}</td><td>{when(t.created_at)}</td>
              <td>
                {editing === t.id
                  ? <LimitsForm initial={t.limits} onSave={async (limits) => { await api(`/admin/tokens/${encodeURIComponent(t.id)}`, { method: 'PATCH', json: { limits } }); setEditing(null); reload(); }} />
                  : <>{limitsText(t.limits)} <button className="link" onClick={() => setEditing(t.id)}>edit</button></>}
              </td>
              <td><button onClick={() => revoke(t.id)}>Revoke</button></td>
            </tr>
          ))}
        </tbody>
      </table>
      <h3>A user's limits</h3>
      <form className="inline" onSubmit={(e) => { e.preventDefault(); setUserId(String(new FormData(e.currentTarget).get('user') ?? '')); }}>
        <input name="user" placeholder="user id" defaultValue={userId} />
        <button type="submit">Show</button>
      </form>
      {user.data && (
        <div key={user.data.user_id}>
          <p>Limits of user <b>{user.data.user_id}</b> (all its tokens together): {limitsText(user.data.limits)}</p>
          <LimitsForm initial={user.data.limits} onSave={async (limits) => { await api(`/admin/users/${encodeURIComponent(userId)}/limits`, { method: 'PUT', json: limits }); user.reload(); }} />
        </div>
      )}
    </section>
  );
}
