import { useState } from 'react';
import { api, query, type Identity, type TeamRole } from '../api.ts';
import { useGet, when } from '../hooks.ts';

type Limits = Record<string, number | string>;
const limitsText = (limits: Limits | undefined) => (limits && Object.keys(limits).length ? Object.entries(limits).map(([k, v]) => `${k}=${v}`).join(', ') : 'none');
const LIMIT_FIELDS = ['requests_per_minute', 'tokens_per_minute', 'concurrent_tasks', 'credits'] as const;

/** The role the caller holds in a team; administrators act as its admin. */
export function roleIn(identity: Identity, teamId: string): TeamRole | undefined {
  return identity.admin ? 'admin' : identity.teams.find((t) => t.id === teamId)?.role;
}

/** One team: its members, tokens, limits and usage, each shown only to the roles that may see it. */
export function TeamPage({ identity, teamId, onChanged }: { identity: Identity; teamId: string; onChanged: () => void }) {
  const role = roleIn(identity, teamId);
  const manages = role === 'admin';
  const team = useGet<any>(manages ? `/admin/teams/${encodeURIComponent(teamId)}` : null);
  const tokens = useGet<{ data: any[] }>(role === 'admin' || role === 'member' ? `/admin/tokens${query({ team_id: teamId })}` : null);
  const usage = useGet<{ rows: any[] }>(`/admin/usage${query({ team_id: teamId, group_by: role === 'viewer' || manages ? 'user' : 'model' })}`);
  const [member, setMember] = useState({ user_id: '', role: 'member' });
  const [created, setCreated] = useState('');
  const [failure, setFailure] = useState('');
  const act = (work: () => Promise<unknown>) => async () => {
    setFailure('');
    try {
      await work();
      team.reload();
      tokens.reload();
    } catch (err) {
      setFailure((err as Error).message);
    }
  };
  const addMember = act(() => api(`/admin/teams/${encodeURIComponent(teamId)}/members/${encodeURIComponent(member.user_id)}`, { method: 'PUT', json: { role: member.role } }));
  const newToken = act(async () => setCreated((await api('/admin/tokens', { method: 'POST', json: { user_id: identity.user_id, team_id: teamId } })).token));
  return (
    <section data-testid="team-page">
      <h2>Team {teamId} <small>({role ?? 'no role'})</small></h2>
      {failure && <p className="error">{failure}</p>}
      {manages && team.data && (
        <>
          <p>Team limits (all its tokens together): {limitsText(team.data.limits)}</p>
          {identity.admin && <TeamLimitsForm teamId={teamId} onSaved={team.reload} />}
          <h3>Members</h3>
          <table data-testid="members-table">
            <thead><tr><th>User</th><th>Role</th><th>Since</th><th></th></tr></thead>
            <tbody>{team.data.members.map((m: any) => (
              <tr key={m.user_id}><td>{m.user_id}</td><td>{m.role}</td><td>{when(m.created_at)}</td>
                <td><button onClick={act(() => api(`/admin/teams/${encodeURIComponent(teamId)}/members/${encodeURIComponent(m.user_id)}`, { method: 'DELETE' }))}>Remove</button></td></tr>
            ))}</tbody>
          </table>
          <form className="inline" onSubmit={(e) => { e.preventDefault(); void addMember(); }}>
            <input placeholder="user id" value={member.user_id} onChange={(e) => setMember({ ...member, user_id: e.target.value })} required />
            <select value={member.role} onChange={(e) => setMember({ ...member, role: e.target.value })}>{['admin', 'member', 'viewer'].map((r) => <option key={r}>{r}</option>)}</select>
            <button type="submit">Add member</button>
          </form>
        </>
      )}
      {tokens.data && (
        <>
          <h3>Tokens</h3>
          <button onClick={newToken}>New token for me</button>
          {created && <p className="once">Shown only now: <code data-testid="new-team-token">{created}</code></p>}
          <table data-testid="team-tokens">
            <thead><tr><th>Id</th><th>User</th><th>Name</th><th>Limits</th><th></th></tr></thead>
            <tbody>{tokens.data.data.map((t) => (
              <tr key={t.id}><td>{t.id}</td><td>{t.user_id}</td><td>{t.name}</td><td>{limitsText(t.limits)}</td>
                <td><button onClick={act(() => api(`/admin/tokens/${encodeURIComponent(t.id)}`, { method: 'DELETE' }))}>Revoke</button></td></tr>
            ))}</tbody>
          </table>
        </>
      )}
      <h3>Usage (30 days)</h3>
      {usage.error && <p className="error">{usage.error}</p>}
      <table data-testid="team-usage">
        <thead><tr><th>Key</th><th>Requests</th><th>Cost</th><th>Errors</th></tr></thead>
        <tbody>{usage.data?.rows.map((r) => <tr key={r.key}><td>{r.key}</td><td>{r.requests}</td><td>{r.cost}</td><td>{r.errors}</td></tr>)}</tbody>
      </table>
      {identity.admin && <button onClick={act(async () => { if (confirm(`Delete team ${teamId}?`)) { await api(`/admin/teams/${encodeURIComponent(teamId)}`, { method: 'DELETE' }); onChanged(); } })}>Delete team</button>}
    </section>
  );
}

function TeamLimitsForm({ teamId, onSaved }: { teamId: string; onSaved: () => void }) {
  const [values, setValues] = useState<Record<string, string>>({});
  const save = async (e: React.FormEvent) => {
    e.preventDefault();
    const limits: Record<string, number | null> = {};
    for (const k of LIMIT_FIELDS) if (values[k] !== undefined) limits[k] = values[k] === '' ? null : Number(values[k]);
    await api(`/admin/teams/${encodeURIComponent(teamId)}`, { method: 'PATCH', json: { limits } });
    onSaved();
  };
  return (
    <form className="limits" onSubmit={save}>
      {LIMIT_FIELDS.map((k) => <label key={k}>{k}<input type="number" min={0} value={values[k] ?? ''} onChange={(e) => setValues({ ...values, [k]: e.target.value })} /></label>)}
      <button type="submit">Save team limits</button>
    </form>
  );
}

/** Administrators create teams here. */
export function NewTeam({ onCreated }: { onCreated: (id: string) => void }) {
  const [form, setForm] = useState({ id: '', name: '' });
  const [failure, setFailure] = useState('');
  return (
    <form className="inline" onSubmit={async (e) => {
      e.preventDefault();
      try {
        await api('/admin/teams', { method: 'POST', json: form });
        onCreated(form.id);
      } catch (err) {
        setFailure((err as Error).message);
      }
    }}>
      <input placeholder="team id" value={form.id} onChange={(e) => setForm({ ...form, id: e.target.value })} required />
      <input placeholder="name" value={form.name} onChange={(e) => setForm({ ...form, name: e.target.value })} required />
      <button type="submit">Create team</button> {failure && <span className="error">{failure}</span>}
    </form>
  );
}
