import { useGet } from '../hooks.ts';

interface Window { window: string; requests: number; errors: number; cost: number; latency_ms_avg: number | null; tasks_by_status: Record<string, number> }

export function Overview({ isAdmin }: { isAdmin: boolean }) {
  const { data, error } = useGet<{ windows: Window[] }>(isAdmin ? '/admin/overview' : '/v1/overview');
  return (
    <section>
      <h2>Overview</h2>
      {error && <p className="error">{error}</p>}
      <div className="cards">
        {data?.windows.map((w) => (
          <div className="card" key={w.window} data-testid={`window-${w.window}`}>
            <h3>Last {w.window}</h3>
            <dl>
              <dt>Requests</dt><dd>{w.requests}</dd>
              <dt>Errors</dt><dd>{w.errors}</dd>
              <dt>Mean latency</dt><dd>{w.latency_ms_avg === null ? '—' : `${w.latency_ms_avg} ms`}</dd>
              <dt>Spend</dt><dd>{w.cost.toFixed(4)} credits</dd>
            </dl>
            <h4>Tasks</h4>
            <ul className="statuses">
              {Object.entries(w.tasks_by_status).map(([status, n]) => <li key={status}><span className={`status ${status}`}>{status}</span> {n}</li>)}
              {Object.keys(w.tasks_by_status).length === 0 && <li>none</li>}
            </ul>
          </div>
        ))}
      </div>
    </section>
  );
}
