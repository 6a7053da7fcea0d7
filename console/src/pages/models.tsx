import { api } from '../api.ts';
import { useGet } from '../hooks.ts';

export function Models({ isAdmin }: { isAdmin: boolean }) {
  const channels = useGet<{ data: any[] }>(isAdmin ? '/admin/channels' : null);
  const models = useGet<{ modelList: { name: string; description?: string; provider: string; types: string[]; enabled?: boolean; billing_mode?: unknown }[] }>('/v1/models/list');
  const toggle = async (c: any) => {
    const action = c.state === 'disabled' ? 'enable' : 'disable';
    const reason = action === 'disable' ? prompt('Why is this channel disabled?', 'disabled from the console') : null;
    if (action === 'disable' && reason === null) return;
    await api(`/admin/channels/${encodeURIComponent(c.provider)}/${encodeURIComponent(c.name)}/${action}`, { method: 'POST', json: action === 'disable' ? { reason } : {} });
    channels.reload();
  };
  return (
    <section>
      <h2>Models and channels</h2>
      {isAdmin && (
        <>
          <h3>Channels</h3>
          {channels.error && <p className="error">{channels.error}</p>}
          <table data-testid="channels">
            <thead><tr><th>Provider</th><th>Channel</th><th>State</th><th>Failures in a row</th><th>Errors (1 min)</th><th>p50 latency (1 min)</th><th>In flight</th><th>Models</th><th></th></tr></thead>
            <tbody>
              {channels.data?.data.map((c) => (
                <tr key={`${c.provider}/${c.name}`}>
                  <td>{c.provider}</td><td>{c.name}</td>
                  <td><span className={`status ${c.state}`}>{c.state}</span>{c.disabled_reason ? ` (${c.disabled_reason})` : ''}</td>
                  <td>{c.consecutive_failures}</td><td>{Math.round((c.error_rate_1m ?? 0) * 100)}%</td><td>{c.latency_p50_ms_1m ?? '—'}</td><td>{c.in_flight}</td>
                  <td className="small">{(c.models ?? []).slice(0, 6).join(', ')}{(c.models ?? []).length > 6 ? '…' : ''}</td>
                  <td><button onClick={() => toggle(c)}>{c.state === 'disabled' ? 'Enable' : 'Disable'}</button></td>
                </tr>
              ))}
            </tbody>
          </table>
        </>
      )}
      <h3>Models</h3>
      {models.error && <p className="error">{models.error}</p>}
      <table data-testid="models">
        <thead><tr><th>Model</th><th>Provider</th><th>Types</th><th>Enabled</th><th>Price</th></tr></thead>
        <tbody>
          {models.data?.modelList.map((m) => (
            <tr key={m.name}>
              <td title={m.description}>{m.name}</td><td>{m.provider}</td><td className="small">{m.types.join(', ')}</td><td>{m.enabled === false ? 'no' : 'yes'}</td>
              <td className="small">{m.billing_mode ? JSON.stringify(m.billing_mode) : '—'}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </section>
  );
}
