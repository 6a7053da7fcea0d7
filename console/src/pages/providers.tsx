import { useState } from 'react';
import { api } from '../api.ts';
import { useGet } from '../hooks.ts';
import { FieldError, isHttpUrl, numberOrUndefined, useFieldErrors } from '../forms.tsx';

const CHANNEL_NAME = /^[A-Za-z0-9._-]{1,100}$/;

interface Channel {
  name: string; base_url: string | null; weight: number; priority: number; models: string[] | null;
  api_key_set: boolean; api_key_last4: string | null; source: string;
}
interface Provider { code: string; adapter: string; base_url: string | null; source: string; channels: Channel[] }
interface ChannelState { provider: string; name: string; state: string; disabled_reason: string | null }

type ChannelForm = { name: string; base_url: string; api_key: string; weight: string; priority: string; models: string };
const EMPTY: ChannelForm = { name: '', base_url: '', api_key: '', weight: '', priority: '', models: '' };

/** The body of a channel form, with the errors found before sending. */
function channelBody(form: ChannelForm, withName: boolean): { body: Record<string, unknown>; errors: Record<string, string | undefined> } {
  const weight = numberOrUndefined(form.weight);
  const priority = numberOrUndefined(form.priority);
  const body: Record<string, unknown> = {};
  if (withName) body.name = form.name.trim();
  if (form.base_url.trim()) body.base_url = form.base_url.trim();
  if (form.api_key) body.api_key = form.api_key;
  if (weight !== undefined) body.weight = weight;
  if (priority !== undefined) body.priority = priority;
  const models = form.models.split(',').map((m) => m.trim()).filter(Boolean);
  if (models.length > 0) body.models = models;
  return {
    body,
    errors: {
      name: withName && !CHANNEL_NAME.test(form.name.trim()) ? 'letters, digits, . _ - (1 to 100)' : undefined,
      base_url: form.base_url.trim() && !isHttpUrl(form.base_url.trim()) ? 'an http(s) URL' : undefined,
      weight: weight !== undefined && !(weight > 0) ? 'a number above 0' : undefined,
      priority: priority !== undefined && !Number.isInteger(priority) ? 'a whole number' : undefined,
    },
  };
}

function ChannelFields({ form, set, errors, withName }: { form: ChannelForm; set: (f: ChannelForm) => void; errors: Record<string, string>; withName: boolean }) {
  const field = (k: keyof ChannelForm, label: string, type = 'text', placeholder = '') => (
    <label>{label}<input name={k} type={type} placeholder={placeholder} value={form[k]} onChange={(e) => set({ ...form, [k]: e.target.value })} /><FieldError errors={errors} field={k} /></label>
  );
  return (
    <>
      {withName && field('name', 'Name')}
      {field('base_url', 'Base URL', 'text', 'https://…')}
      {field('api_key', 'API key (write-only)', 'password')}
      {field('weight', 'Weight', 'text', '1')}
      {field('priority', 'Priority', 'text', '0')}
      {field('models', 'Models (aliases, comma-separated)', 'text', 'all of the provider')}
    </>
  );
}

function ChannelRow({ provider, channel, state, reload }: { provider: string; channel: Channel; state: ChannelState | undefined; reload: () => void }) {
  const [editing, setEditing] = useState(false);
  const [form, setForm] = useState<ChannelForm>(EMPTY);
  const [message, setMessage] = useState('');
  const errors = useFieldErrors();
  const path = `/admin/providers/${encodeURIComponent(provider)}/channels/${encodeURIComponent(channel.name)}`;
  const save = async (e: React.FormEvent) => {
    e.preventDefault();
    const { body, errors: found } = channelBody(form, false);
    if (!errors.check(found)) return;
    try {
      await api(path, { method: 'PATCH', json: body });
      setEditing(false);
      setMessage('saved');
      reload();
    } catch (err) {
      errors.fail(err);
    }
  };
  const test = async () => {
    setMessage('testing…');
    const r = await api(`${path}/test`, { method: 'POST' }).catch((err: Error) => ({ ok: false, error: err.message, latency_ms: 0 }));
    setMessage(r.ok ? `test ok in ${r.latency_ms} ms${r.model ? ` (${r.model})` : ''}` : `test failed: ${r.error}`);
  };
  const toggle = async () => {
    const disable = state?.state !== 'disabled';
    const reason = disable ? prompt('Why is this channel disabled?', 'disabled from the console') : null;
    if (disable && reason === null) return;
    await api(`/admin/channels/${encodeURIComponent(provider)}/${encodeURIComponent(channel.name)}/${disable ? 'disable' : 'enable'}`, { method: 'POST', json: disable ? { reason } : {} });
    reload();
  };
  const remove = async () => {
    if (!confirm(`Remove channel ${provider}/${channel.name}?`)) return;
    await api(path, { method: 'DELETE' });
    reload();
  };
  return (
    <>
      <tr data-channel={`${provider}/${channel.name}`}>
        <td>{channel.name} <span className="source">{channel.source}</span></td>
        <td className="small">{channel.base_url ?? '—'}</td>
        <td>{channel.weight}</td><td>{channel.priority}</td>
        <td className="mono" data-testid="key">{channel.api_key_set ? `…${channel.api_key_last4}` : 'none'}</td>
        <td><span className={`status ${state?.state ?? ''}`}>{state?.state ?? '—'}</span>{state?.disabled_reason ? ` (${state.disabled_reason})` : ''}</td>
        <td className="small">{channel.models ? channel.models.join(', ') : 'all'}</td>
        <td>
          <button onClick={() => { setForm({ ...EMPTY, base_url: channel.base_url ?? '', weight: String(channel.weight), priority: String(channel.priority), models: channel.models?.join(', ') ?? '' }); errors.clear(); setEditing(!editing); }}>Edit / rotate key</button>{' '}
          <button onClick={test}>Test</button>{' '}
          <button onClick={toggle}>{state?.state === 'disabled' ? 'Enable' : 'Disable'}</button>{' '}
          <button onClick={remove}>Remove</button>
          {message && <div className="small" data-testid="channel-message">{message}</div>}
        </td>
      </tr>
      {editing && (
        <tr><td colSpan={8}>
          <form className="grid" onSubmit={save} data-testid="edit-channel">
            <ChannelFields form={form} set={setForm} errors={errors.errors} withName={false} />
            <div><button type="submit">Save channel</button></div>
            <FieldError errors={errors.errors} field="form" />
          </form>
        </td></tr>
      )}
    </>
  );
}

export function Providers() {
  const providers = useGet<{ data: Provider[] }>('/admin/providers');
  const states = useGet<{ data: ChannelState[] }>('/admin/channels');
  const [provider, setProvider] = useState('');
  const [form, setForm] = useState<ChannelForm>(EMPTY);
  const errors = useFieldErrors();
  const reload = () => { providers.reload(); states.reload(); };
  const add = async (e: React.FormEvent) => {
    e.preventDefault();
    const { body, errors: found } = channelBody(form, true);
    if (!errors.check({ ...found, code: provider.trim() ? undefined : 'a provider code' })) return;
    try {
      await api(`/admin/providers/${encodeURIComponent(provider.trim())}/channels`, { method: 'POST', json: body });
      setForm(EMPTY);
      errors.clear();
      reload();
    } catch (err) {
      errors.fail(err);
    }
  };
  return (
    <section>
      <h2>Providers and channels</h2>
      <p>Changes apply to every instance within 2 seconds. API keys are write-only: only their last four characters are shown.</p>
      {providers.error && <p className="error">{providers.error}</p>}
      {providers.data?.data.map((p) => (
        <div key={p.code} data-provider={p.code}>
          <h3>{p.code} <span className="source">{p.source}</span> <span className="small">adapter {p.adapter}{p.base_url ? `, ${p.base_url}` : ''}</span></h3>
          <table>
            <thead><tr><th>Channel</th><th>Base URL</th><th>Weight</th><th>Priority</th><th>Key</th><th>State</th><th>Models</th><th></th></tr></thead>
            <tbody>{p.channels.map((c) => <ChannelRow key={c.name} provider={p.code} channel={c} state={states.data?.data.find((s) => s.provider === p.code && s.name === c.name)} reload={reload} />)}</tbody>
          </table>
        </div>
      ))}
      <h3>Add a channel</h3>
      <form className="grid" onSubmit={add} data-testid="add-channel">
        <label>Provider code<input name="code" list="provider-codes" value={provider} onChange={(e) => setProvider(e.target.value)} placeholder="openai" /><FieldError errors={errors.errors} field="code" /></label>
        <datalist id="provider-codes">{providers.data?.data.map((p) => <option key={p.code} value={p.code} />)}</datalist>
        <ChannelFields form={form} set={setForm} errors={errors.errors} withName />
        <div><button type="submit">Add channel</button></div>
        <FieldError errors={errors.errors} field="form" />
      </form>
    </section>
  );
}
