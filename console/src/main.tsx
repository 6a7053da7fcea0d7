import { StrictMode, useEffect, useState } from 'react';
import { createRoot } from 'react-dom/client';
import { api, session, whoAmI, type Identity } from './api.ts';
import { useRoute, Link } from './router.tsx';
import { useGet } from './hooks.ts';
import { Overview } from './pages/overview.tsx';
import { TaskDetail, Tasks } from './pages/tasks.tsx';
import { Requests } from './pages/requests.tsx';
import { Batches } from './pages/batches.tsx';
import { Tokens } from './pages/tokens.tsx';
import { Models } from './pages/models.tsx';
import { Usage } from './pages/usage.tsx';
import { Playground } from './pages/playground.tsx';
import { Settings } from './pages/settings.tsx';
import { NewTeam, TeamPage } from './pages/teams.tsx';
import { Providers } from './pages/providers.tsx';
import { ModelSettings } from './pages/model-settings.tsx';
import { McpServers } from './pages/mcp-servers.tsx';
import { Audit } from './pages/audit.tsx';
import './style.css';

/** Who may open a page: administrators, API tokens (their own data), and console users by team role. */
type PageAccess = { admin: boolean; apiToken: boolean; teamRoles: string[] };
const ALL: PageAccess = { admin: true, apiToken: true, teamRoles: [] };
const ADMIN_ONLY: PageAccess = { admin: true, apiToken: false, teamRoles: [] };

/** `bearerOnly`: the page calls /v1, which takes tokens, not console sessions. */
const PAGES: { path: string; label: string; access: PageAccess; bearerOnly?: boolean }[] = [
  { path: 'overview', label: 'Overview', access: { ...ALL, teamRoles: ['admin', 'member'] } },
  { path: 'teams', label: 'Teams', access: { admin: true, apiToken: false, teamRoles: ['admin', 'member', 'viewer'] } },
  { path: 'tasks', label: 'Tasks', access: { ...ALL, teamRoles: ['admin', 'member'] } },
  { path: 'requests', label: 'Requests', access: { ...ADMIN_ONLY, teamRoles: ['admin', 'member'] } },
  { path: 'batches', label: 'Batches', access: { admin: true, apiToken: true, teamRoles: [] } },
  { path: 'tokens', label: 'Tokens & users', access: ADMIN_ONLY },
  { path: 'models', label: 'Models & channels', access: { admin: true, apiToken: true, teamRoles: [] }, bearerOnly: true },
  { path: 'usage', label: 'Usage', access: { ...ALL, teamRoles: ['admin', 'member', 'viewer'] } },
  { path: 'playground', label: 'Playground', access: { admin: true, apiToken: true, teamRoles: [] }, bearerOnly: true },
  { path: 'providers', label: 'Providers', access: ADMIN_ONLY },
  { path: 'model-settings', label: 'Model settings', access: ADMIN_ONLY },
  { path: 'mcp-servers', label: 'MCP servers', access: ADMIN_ONLY },
  { path: 'audit', label: 'Audit log', access: ADMIN_ONLY },
  { path: 'settings', label: 'Settings', access: ADMIN_ONLY },
];

/** What a role may not do is not shown, rather than failing when tried. */
function mayOpen(identity: Identity, access: PageAccess, bearerOnly = false): boolean {
  if (bearerOnly && identity.via === 'session') return false;
  if (identity.admin) return access.admin;
  if (identity.via === 'api_token') return access.apiToken;
  return identity.teams.some((t) => access.teamRoles.includes(t.role));
}

function SignIn({ onSignedIn }: { onSignedIn: (identity: Identity) => void }) {
  const [token, setToken] = useState('');
  const [error, setError] = useState('');
  const options = useGet<{ sso: boolean }>('/console/auth/options');
  const submit = async (e: React.FormEvent) => {
    e.preventDefault();
    setError('');
    try {
      const identity = await whoAmI(token.trim());
      session.set(token.trim());
      onSignedIn(identity!);
    } catch (err) {
      setError((err as Error).message);
    }
  };
  return (
    <form className="signin" onSubmit={submit}>
      <h1>Gengate console</h1>
      {options.data?.sso && <a className="sso" href="/console/auth/login" data-testid="sso">Sign in with SSO</a>}
      <p>Sign in with the admin token (everything) or an API token (your own tasks and usage).</p>
      <input id="token" type="password" placeholder="token" value={token} onChange={(e) => setToken(e.target.value)} autoFocus />
      <button type="submit">Sign in</button>
      {error && <p className="error">{error}</p>}
    </form>
  );
}

/** The teams page: a team switcher, the chosen team's pages, and (administrators) a new team. */
function Teams({ identity }: { identity: Identity }) {
  const all = useGet<{ data: { id: string; name: string }[] }>(identity.admin ? '/admin/teams' : null);
  const teams = identity.admin ? all.data?.data ?? [] : identity.teams;
  const [chosen, setChosen] = useState<string>('');
  const teamId = chosen || teams[0]?.id || '';
  return (
    <section>
      <div className="filters">
        <label>Team <select data-testid="team-switcher" value={teamId} onChange={(e) => setChosen(e.target.value)}>{teams.map((t) => <option key={t.id} value={t.id}>{t.name} ({t.id})</option>)}</select></label>
      </div>
      {identity.admin && <NewTeam onCreated={(id) => { all.reload(); setChosen(id); }} />}
      {teamId ? <TeamPage key={teamId} identity={identity} teamId={teamId} onChanged={() => { all.reload(); setChosen(''); }} /> : <p>No team.</p>}
    </section>
  );
}

function App() {
  const [identity, setIdentity] = useState<Identity | null | 'checking'>('checking');
  const route = useRoute();
  useEffect(() => {
    // A kept token, else the session cookie of a sign-in with SSO.
    if (identity === 'checking') whoAmI(session.token() ?? undefined).then((who) => setIdentity(who ?? null), () => { session.clear(); setIdentity(null); });
  }, [identity]);
  if (identity === 'checking') return <p className="loading">Loading…</p>;
  if (identity === null) return <SignIn onSignedIn={setIdentity} />;
  const [page, id] = route;
  // Console sessions read through the /admin routes, which keep each role to what it may see.
  const isAdmin = identity.admin || identity.via === 'session';
  const pages = PAGES.filter((p) => mayOpen(identity, p.access, p.bearerOnly));
  const current = pages.find((p) => p.path === page)?.path ?? pages[0]?.path;
  let content: React.ReactNode;
  switch (current) {
    case 'teams': content = <Teams identity={identity} />; break;
    case 'tasks': content = id ? <TaskDetail id={id} isAdmin={isAdmin} deliveries={identity.admin} /> : <Tasks isAdmin={isAdmin} />; break;
    case 'requests': content = <Requests />; break;
    case 'batches': content = <Batches isAdmin={isAdmin} />; break;
    case 'tokens': content = <Tokens />; break;
    case 'models': content = <Models isAdmin={identity.admin} />; break;
    case 'usage': content = <Usage isAdmin={isAdmin} />; break;
    case 'playground': content = <Playground />; break;
    case 'settings': content = <Settings />; break;
    case 'providers': content = <Providers />; break;
    case 'model-settings': content = <ModelSettings />; break;
    case 'mcp-servers': content = <McpServers />; break;
    case 'audit': content = <Audit />; break;
    case 'overview': content = <Overview isAdmin={isAdmin} />; break;
    default: content = <p>Nothing to show for your roles.</p>;
  }
  const signOut = async () => {
    if (identity.via === 'session') await api('/console/auth/logout', { method: 'POST' }).catch(() => undefined);
    session.clear();
    setIdentity(null);
  };
  return (
    <div className="shell">
      <nav>
        <div className="brand">Gengate</div>
        {pages.map((p) => (
          <Link key={p.path} to={p.path} className={current === p.path ? 'active' : ''}>{p.label}</Link>
        ))}
        <div className="who" data-testid="who">{identity.via === 'admin_token' ? 'admin' : identity.via === 'api_token' ? 'API token' : `${identity.user_id}${identity.admin ? ' (admin)' : ''}`}</div>
        <button className="link" data-testid="sign-out" onClick={() => void signOut()}>Sign out</button>
      </nav>
      <main>{content}</main>
    </div>
  );
}

createRoot(document.getElementById('root')!).render(<StrictMode><App /></StrictMode>);
