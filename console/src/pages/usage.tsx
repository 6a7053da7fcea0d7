import { useEffect, useRef, useState } from 'react';
import uPlot from 'uplot';
import 'uplot/dist/uPlot.min.css';
import { query } from '../api.ts';
import { useGet } from '../hooks.ts';

interface Row { key: string; requests: number; tasks: number; input_tokens: number; cached_input_tokens: number; cache_write_tokens: number; output_tokens: number; cost: number; errors: number }

const DAY_MS = 86_400_000;

/** Requests and errors per day over the range, with a day for every date (0 when nothing ran). */
function DailyChart({ rows, from, to }: { rows: Row[]; from: string; to: string }) {
  const box = useRef<HTMLDivElement>(null);
  useEffect(() => {
    const byDay = new Map(rows.map((r) => [r.key, r]));
    const xs: number[] = [], requests: number[] = [], errors: number[] = [], cost: number[] = [];
    for (let t = Date.parse(from.slice(0, 10)); t <= Date.parse(to.slice(0, 10)); t += DAY_MS) {
      const row = byDay.get(new Date(t).toISOString().slice(0, 10));
      xs.push(t / 1000); requests.push(row?.requests ?? 0); errors.push(row?.errors ?? 0); cost.push(row?.cost ?? 0);
    }
    const chart = new uPlot({
      width: 760, height: 260,
      series: [{}, { label: 'requests', stroke: '#3b82f6', width: 2 }, { label: 'errors', stroke: '#ef4444', width: 2 }, { label: 'cost', stroke: '#10b981', width: 2, scale: 'cost' }],
      axes: [{}, {}, { scale: 'cost', side: 1, grid: { show: false } }],
    }, [xs, requests, errors, cost], box.current!);
    return () => chart.destroy();
  }, [rows, from, to]);
  return <div ref={box} data-testid="usage-chart" />;
}

export function Usage({ isAdmin }: { isAdmin: boolean }) {
  const [range, setRange] = useState(() => ({ from: new Date(Date.now() - 29 * DAY_MS).toISOString().slice(0, 10), to: new Date().toISOString().slice(0, 10) }));
  const [groupBy, setGroupBy] = useState('model');
  const base = isAdmin ? '/admin/usage' : '/v1/usage';
  const window = { from: `${range.from}T00:00:00Z`, to: new Date(Date.parse(range.to) + DAY_MS).toISOString() };
  const daily = useGet<{ rows: Row[] }>(`${base}${query({ ...window, group_by: 'day' })}`);
  const grouped = useGet<{ rows: Row[] }>(`${base}${query({ ...window, group_by: groupBy })}`);
  const groups = isAdmin ? ['model', 'user', 'token', 'provider', 'team'] : ['model', 'team'];
  return (
    <section>
      <h2>Usage</h2>
      <div className="filters">
        <label>from <input type="date" value={range.from} onChange={(e) => setRange({ ...range, from: e.target.value })} /></label>
        <label>to <input type="date" value={range.to} onChange={(e) => setRange({ ...range, to: e.target.value })} /></label>
      </div>
      {daily.error && <p className="error">{daily.error}</p>}
      {daily.data && <DailyChart rows={daily.data.rows} from={range.from} to={range.to} />}
      <div className="filters">by {groups.map((g) => <button key={g} className={g === groupBy ? 'active' : ''} onClick={() => setGroupBy(g)}>{g}</button>)}</div>
      <table>
        <thead><tr><th>{groupBy}</th><th>Requests</th><th>Tasks</th><th>Input tokens</th><th>Cached input</th><th>Cache writes</th><th>Output tokens</th><th>Cost</th><th>Errors</th></tr></thead>
        <tbody data-testid="usage-rows">{grouped.data?.rows.map((r) => (
          <tr key={r.key}>
            <td>{r.key}</td><td>{r.requests}</td><td>{r.tasks}</td><td>{r.input_tokens}</td>
            <td className="cached-input">{r.cached_input_tokens}</td><td className="cache-writes">{r.cache_write_tokens}</td>
            <td>{r.output_tokens}</td><td>{r.cost}</td><td>{r.errors}</td>
          </tr>
        ))}</tbody>
      </table>
    </section>
  );
}
