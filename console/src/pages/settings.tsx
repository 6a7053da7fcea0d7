import { useEffect, useState } from 'react';
import { api } from '../api.ts';
import { useGet } from '../hooks.ts';

export function Settings() {
  const { data, error, reload } = useGet<{ callback_url?: string; callback_secret?: string; callback_timeout_ms: number; callback_retry_delays_ms: number[] }>('/admin/config');
  const [form, setForm] = useState({ callback_url: '', callback_secret: '', callback_timeout_ms: '', callback_retry_delays_ms: '' });
  const [message, setMessage] = useState('');
  useEffect(() => {
    if (data) setForm({ callback_url: data.callback_url ?? '', callback_secret: data.callback_secret ?? '', callback_timeout_ms: String(data.callback_timeout_ms), callback_retry_delays_ms: data.callback_retry_delays_ms.join(', ') });
  }, [data]);
  const save = async (e: React.FormEvent) => {
    e.preventDefault();
    try {
      await api('/admin/config', {
        method: 'PUT',
        json: {
          callback_url: form.callback_url || null,
          callback_secret: form.callback_secret || null,
          callback_timeout_ms: Number(form.callback_timeout_ms),
          callback_retry_delays_ms: form.callback_retry_delays_ms.split(',').map((s) => s.trim()).filter(Boolean).map(Number),
        },
      });
      setMessage('saved');
      reload();
    } catch (err) {
      setMessage((err as Error).message);
    }
  };
  const test = async () => {
    try {
      const r = await api('/admin/config/test-delivery', { method: 'POST' });
      setMessage(r.delivered ? `test delivery answered 200 in ${r.duration_ms} ms` : `test delivery not delivered: ${r.http_status ?? r.error}`);
    } catch (err) {
      setMessage((err as Error).message);
    }
  };
  const field = (k: keyof typeof form, label: string, type = 'text') => (
    <label>{label}<input type={type} value={form[k]} onChange={(e) => setForm({ ...form, [k]: e.target.value })} /></label>
  );
  return (
    <section>
      <h2>Settings</h2>
      <h3>Task callback</h3>
      <p>Every status change of every task is POSTed here (Standard Webhooks headers; signed when a secret is set).</p>
      {error && <p className="error">{error}</p>}
      <form className="stacked" onSubmit={save}>
        {field('callback_url', 'Callback URL')}
        {field('callback_secret', 'Secret', 'password')}
        {field('callback_timeout_ms', 'Timeout (ms)', 'number')}
        {field('callback_retry_delays_ms', 'Retry delays (ms, comma-separated)')}
        <div><button type="submit">Save</button> <button type="button" onClick={test}>Send a test delivery</button></div>
      </form>
      {message && <p data-testid="settings-message">{message}</p>}
    </section>
  );
}
