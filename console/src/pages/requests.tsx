import { useState } from 'react';
import { query } from '../api.ts';
import { useGet, when } from '../hooks.ts';
import { Link } from '../router.tsx';

export function Requests() {
  const [filters, setFilters] = useState({ user_id: '', model: '', status: '', batch_id: '' });
  const [cursor, setCursor] = useState<string | undefined>();
  const [trail, setTrail] = useState<(string | undefined)[]>([]);
  const { data, error } = useGet<{ data: any[]; next_cursor: string | null }>(`/admin/requests${query({ ...filters, limit: 50, cursor })}`);
  const set = (k: keyof typeof filters) => (e: React.ChangeEvent<HTMLInputElement>) => { setCursor(undefined); setTrail([]); setFilters({ ...filters, [k]: e.target.value }); };
  return (
    <section>
      <h2>Requests</h2>
      <div className="filters">
        <input placeholder="user id" value={filters.user_id} onChange={set('user_id')} />
        <input placeholder="model" value={filters.model} onChange={set('model')} />
        <input placeholder="status" value={filters.status} onChange={set('status')} />
        <input placeholder="batch id" value={filters.batch_id} onChange={set('batch_id')} />
      </div>
      {error && <p className="error">{error}</p>}
      <table>
        <thead><tr><th>Time</th><th>Endpoint</th><th>Model</th><th>Provider / channel</th><th>User</th><th>Status</th><th title="input (uncached) / read from the prompt cache / written to it / output">Tokens in/cached/written/out</th><th>Cost</th><th>Latency</th><th>Task</th></tr></thead>
        <tbody data-testid="request-rows">
          {data?.data.map((r) => (
            <tr key={r.id}>
              <td>{when(r.created_at)}</td><td>{r.endpoint}</td><td>{r.model}</td><td>{r.provider}{r.channel ? ` / ${r.channel}` : ''}</td><td>{r.user_id}</td>
              <td><span className={`status ${r.status}`}>{r.status}</span>{r.http_status ? ` ${r.http_status}` : ''}</td>
              <td className="tokens">{r.input_tokens}/{r.cached_input_tokens}/{r.cache_write_tokens}/{r.output_tokens}</td><td>{r.cost}</td><td>{r.latency_ms} ms</td>
              <td>{r.task_id && <Link to={`tasks/${encodeURIComponent(r.task_id)}`}>{r.task_id}</Link>}</td>
            </tr>
          ))}
        </tbody>
      </table>
      {data && data.data.length === 0 && <p>No requests.</p>}
      <div className="pager">
        <button disabled={trail.length === 0} onClick={() => { setCursor(trail[trail.length - 1]); setTrail(trail.slice(0, -1)); }}>Newer</button>
        <button disabled={!data?.next_cursor} onClick={() => { setTrail([...trail, cursor]); setCursor(data!.next_cursor!); }}>Older</button>
      </div>
    </section>
  );
}
