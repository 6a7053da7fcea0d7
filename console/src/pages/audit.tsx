import { Fragment, useState } from 'react';
import { query } from '../api.ts';
import { useGet, when } from '../hooks.ts';

interface AuditRow { id: string; at: string; actor: { type: string; id: string }; action: string; target: string; before: unknown; after: unknown; request_id: string | null; ip: string | null }

/** The audit log, newest first, filtered by action, target and actor, a page at a time. */
export function Audit() {
  const [filters, setFilters] = useState({ action: '', target: '', actor: '' });
  const [cursors, setCursors] = useState<string[]>([]);
  const [open, setOpen] = useState<string | null>(null);
  const page = useGet<{ data: AuditRow[]; next_cursor: string | null }>(`/admin/audit${query({ ...filters, limit: 50, cursor: cursors[cursors.length - 1] })}`);
  const set = (k: keyof typeof filters) => (e: React.ChangeEvent<HTMLInputElement>) => { setCursors([]); setFilters({ ...filters, [k]: e.target.value }); };
  return (
    <section>
      <h2>Audit log</h2>
      <div className="filters">
        <input placeholder="action (channel.create)" value={filters.action} onChange={set('action')} />
        <input placeholder="target (channel:openai/main)" value={filters.target} onChange={set('target')} />
        <input placeholder="actor (admin)" value={filters.actor} onChange={set('actor')} />
      </div>
      {page.error && <p className="error">{page.error}</p>}
      <table data-testid="audit">
        <thead><tr><th>When</th><th>Actor</th><th>Action</th><th>Target</th><th>Request</th><th></th></tr></thead>
        <tbody>
          {page.data?.data.map((r) => (
            <Fragment key={r.id}>
              <tr data-action={r.action}>
                <td>{when(r.at)}</td><td>{r.actor.type === 'admin_token' ? 'admin token' : r.actor.id}</td><td>{r.action}</td><td className="mono">{r.target}</td>
                <td className="small">{r.request_id} {r.ip}</td>
                <td><button className="link" onClick={() => setOpen(open === r.id ? null : r.id)}>{open === r.id ? 'hide' : 'before / after'}</button></td>
              </tr>
              {open === r.id && <tr><td colSpan={3}><pre className="record">{JSON.stringify(r.before, null, 2)}</pre></td><td colSpan={3}><pre className="record">{JSON.stringify(r.after, null, 2)}</pre></td></tr>}
            </Fragment>
          ))}
        </tbody>
      </table>
      <div className="pager">
        {cursors.length > 0 && <button onClick={() => setCursors(cursors.slice(0, -1))}>Newer</button>}
        {page.data?.next_cursor && <button onClick={() => setCursors([...cursors, page.data!.next_cursor!])}>Older</button>}
      </div>
    </section>
  );
}
