import { StrictMode, useEffect, useState } from 'react';
import { createRoot } from 'react-dom/client';
import { session, whoAmI } from './api.ts';
import { useRoute, Link } from './router.tsx';
import { Overview } from './pages/overview.tsx';
import { TaskDetail, Tasks } from './pages/tasks.tsx';
import { Requests } from './pages/requests.tsx';
import { Tokens } from './pages/tokens.tsx';
import { Models } from './pages/models.tsx';
import { Usage } from './pages/usage.tsx';
import { Playground } from './pages/playground.tsx';
import { Settings } from './pages/settings.tsx';
import { Providers } from './pages/providers.tsx';
import { ModelSettings } from './pages/model-settings.tsx';
import { McpServers } from './pages/mcp-servers.tsx';
import { Audit } from './pages/audit.tsx';
import './style.css';

export type Role = 'admin' | 'user';

const PAGES: { path: string; label: string; adminOnly?: boolean }[] = [
  { path: 'overview', label: 'Overview' },
  { path: 'tasks', label: 'Tasks' },
  { path: 'requests', label: 'Requests', adminOnly: true },
  { path: 'tokens', label: 'Tokens & users', adminOnly: true },
  { path: 'models', label: 'Models & channels' },
  { path: 'usage', label: 'Usage' },
  { path: 'playground', label: 'Playground' },
  { path: 'providers', label: 'Providers', adminOnly: true },
  { path: 'model-settings', label: 'Model settings', adminOnly: true },
  { path: 'mcp-servers', label: 'MCP servers', adminOnly: true },
  { path: 'audit', label: 'Audit log', adminOnly: true },
  { path: 'settings', label: 'Settings', adminOnly: true },
];

function SignIn({ onSignedIn }: { onSignedIn: (role: Role) => void }) {
  const [token, setToken] = useState('');
  const [error, setError] = useState('');
  const submit = async (e: React.FormEvent) => {
    e.preventDefault();
    setError('');
    try {
      const role = await whoAmI(token.trim());
      session.set(token.trim());
      onSignedIn(role);
    } catch (err) {
      setError((err as Error).message);
    }
  };
  return (
    <form className="signin" onSubmit={submit}>
      <h1>Gengate console</h1>
      <p>Sign in with the admin token (everything) or an API token (your own tasks and usage).</p>
      <input id="token" type="password" placeholder="token" value={token} onChange={(e) => setToken(e.target.value)} autoFocus />
      <button type="submit">Sign in</button>
      {error && <p className="error">{error}</p>}
    </form>
  );
}

function App() {
  const [role, setRole] = useState<Role | null | 'checking'>(session.token() ? 'checking' : null);
  const route = useRoute();
  useEffect(() => {
    const token = session.token();
    if (role === 'checking' && token) whoAmI(token).then(setRole, () => { session.clear(); setRole(null); });
  }, [role]);
  if (role === 'checking') return <p className="loading">Loading…</p>;
  if (role === null) return <SignIn onSignedIn={setRole} />;
  const [page, id] = route;
  const isAdmin = role === 'admin';
  let content: React.ReactNode;
  switch (page) {
    case 'tasks': content = id ? <TaskDetail id={id} isAdmin={isAdmin} /> : <Tasks isAdmin={isAdmin} />; break;
    case 'requests': content = <Requests />; break;
    case 'tokens': content = <Tokens />; break;
    case 'models': content = <Models isAdmin={isAdmin} />; break;
    case 'usage': content = <Usage isAdmin={isAdmin} />; break;
    case 'playground': content = <Playground />; break;
    case 'settings': content = <Settings />; break;
    case 'providers': content = <Providers />; break;
    case 'model-settings': content = <ModelSettings />; break;
    case 'mcp-servers': content = <McpServers />; break;
    case 'audit': content = <Audit />; break;
    default: content = <Overview isAdmin={isAdmin} />;
  }
  return (
    <div className="shell">
      <nav>
        <div className="brand">Gengate</div>
        {PAGES.filter((p) => isAdmin || !p.adminOnly).map((p) => (
          <Link key={p.path} to={p.path} className={page === p.path || (page === '' && p.path === 'overview') ? 'active' : ''}>{p.label}</Link>
        ))}
        <div className="who">{isAdmin ? 'admin' : 'API token'}</div>
        <button className="link" onClick={() => { session.clear(); setRole(null); }}>Sign out</button>
      </nav>
      <main>{content}</main>
    </div>
  );
}

createRoot(document.getElementById('root')!).render(<StrictMode><App /></StrictMode>);
