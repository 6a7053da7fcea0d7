import { useState } from 'react';
import { api } from '../api.ts';
import { useGet } from '../hooks.ts';
import { FieldError, isHttpUrl, useFieldErrors } from '../forms.tsx';

interface McpServer { name: string; url: string; headers: Record<string, string>; tools: string[] | null; source: string }

const NAME = /^[a-z0-9_-]{1,64}$/;
const EMPTY = { name: '', url: '', header: '', value: '', tools: '' };

/** Upstream MCP servers: header values given literally are secrets (shown as ***), `env:VAR` names a variable of the server. */
export function McpServers() {
  const servers = useGet<{ data: McpServer[] }>('/admin/mcp-servers');
  const [form, setForm] = useState(EMPTY);
  const errors = useFieldErrors();
  const add = async (e: React.FormEvent) => {
    e.preventDefault();
    const name = form.name.trim();
    const header = form.header.trim();
    if (!errors.check({
      name: !NAME.test(name) ? 'lowercase letters, digits, _ and -' : name === 'gengate' ? 'gengate is the gateway\'s own tools' : undefined,
      url: !isHttpUrl(form.url.trim()) ? 'an http(s) URL' : undefined,
      headers: header && !form.value ? 'a value (or env:VAR)' : undefined,
    })) return;
    const tools = form.tools.split(',').map((t) => t.trim()).filter(Boolean);
    try {
      await api('/admin/mcp-servers', { method: 'POST', json: { name, url: form.url.trim(), ...(header ? { headers: { [header]: form.value } } : {}), ...(tools.length ? { tools } : {}) } });
      setForm(EMPTY);
      servers.reload();
    } catch (err) {
      errors.fail(err);
    }
  };
  const remove = async (name: string) => {
    if (!confirm(`Remove MCP server ${name}?`)) return;
    await api(`/admin/mcp-servers/${encodeURIComponent(name)}`, { method: 'DELETE' });
    servers.reload();
  };
  const field = (k: keyof typeof EMPTY, label: string, placeholder = '', type = 'text') => (
    <label>{label}<input name={k} type={type} placeholder={placeholder} value={form[k]} onChange={(e) => setForm({ ...form, [k]: e.target.value })} /></label>
  );
  return (
    <section>
      <h2>MCP servers</h2>
      {servers.error && <p className="error">{servers.error}</p>}
      <table data-testid="mcp-servers">
        <thead><tr><th>Name</th><th>URL</th><th>Headers</th><th>Tools</th><th></th></tr></thead>
        <tbody>
          {servers.data?.data.map((s) => (
            <tr key={s.name} data-mcp={s.name}>
              <td>{s.name} <span className="source">{s.source}</span></td><td className="small">{s.url}</td>
              <td className="small mono">{Object.entries(s.headers).map(([h, v]) => `${h}: ${v}`).join('; ') || '—'}</td>
              <td className="small">{s.tools ? s.tools.join(', ') : 'all'}</td>
              <td><button onClick={() => remove(s.name)}>Remove</button></td>
            </tr>
          ))}
        </tbody>
      </table>
      <h3>Add a server</h3>
      <form className="grid" onSubmit={add} data-testid="add-mcp">
        <div>{field('name', 'Name', 'everything')}<FieldError errors={errors.errors} field="name" /></div>
        <div>{field('url', 'URL', 'https://…/mcp')}<FieldError errors={errors.errors} field="url" /></div>
        {field('header', 'Header name', 'Authorization')}
        <div>{field('value', 'Header value (secret, or env:VAR)', '', 'password')}<FieldError errors={errors.errors} field="headers" /></div>
        {field('tools', 'Allowed tools (comma-separated)', 'all')}
        <div><button type="submit">Add server</button></div>
        <FieldError errors={errors.errors} field="form" />
      </form>
    </section>
  );
}
