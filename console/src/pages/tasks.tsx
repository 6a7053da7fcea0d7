import { useEffect, useState } from 'react';
import { api, ApiFailure, query, streamEvents } from '../api.ts';
import { useGet, when } from '../hooks.ts';
import { Link } from '../router.tsx';
import { Outputs } from '../outputs.tsx';

const STATUSES = ['', 'submitted', 'started', 'process', 'success', 'failed', 'rejected', 'cancelled'];
const TERMINAL = ['success', 'failed', 'rejected', 'cancelled'];

export function Tasks({ isAdmin }: { isAdmin: boolean }) {
  const [filters, setFilters] = useState({ status: '', model: '', user_id: '' });
  const [cursor, setCursor] = useState<string | undefined>();
  const [trail, setTrail] = useState<(string | undefined)[]>([]);
  const path = `${isAdmin ? '/admin/tasks' : '/v1/tasks'}${query({ ...filters, user_id: isAdmin ? filters.user_id : undefined, limit: 50, cursor })}`;
  const { data, error, reload } = useGet<{ data: any[]; next_cursor: string | null }>(path);
  const set = (k: keyof typeof filters) => (e: React.ChangeEvent<HTMLInputElement | HTMLSelectElement>) => { setCursor(undefined); setTrail([]); setFilters({ ...filters, [k]: e.target.value }); };
  return (
    <section>
      <h2>Tasks</h2>
      <div className="filters">
        <select value={filters.status} onChange={set('status')} aria-label="status">{STATUSES.map((s) => <option key={s} value={s}>{s || 'any status'}</option>)}</select>
        <input placeholder="model" value={filters.model} onChange={set('model')} />
        {isAdmin && <input placeholder="user id" value={filters.user_id} onChange={set('user_id')} />}
        <button onClick={reload}>Refresh</button>
      </div>
      {error && <p className="error">{error}</p>}
      <table data-testid="tasks-table">
        <thead><tr><th>Task</th><th>Status</th><th>Model</th><th>User</th><th>Progress</th><th>Finished</th></tr></thead>
        <tbody>
          {data?.data.map((r) => {
            const q = r.queue_status;
            return (
              <tr key={q.task_id}>
                <td><Link to={`tasks/${encodeURIComponent(q.task_id)}`}>{q.task_id}</Link></td>
                <td><span className={`status ${q.status}`}>{q.status}</span></td>
                <td>{r.generate_info?.workflow?._id}</td>
                <td>{r.user?._id}</td>
                <td>{q.progress}%</td>
                <td>{when(q.data?.finished_at)}</td>
              </tr>
            );
          })}
        </tbody>
      </table>
      {data && data.data.length === 0 && <p>No tasks.</p>}
      <div className="pager">
        <button disabled={trail.length === 0} onClick={() => { setCursor(trail[trail.length - 1]); setTrail(trail.slice(0, -1)); }}>Newer</button>
        <button disabled={!data?.next_cursor} onClick={() => { setTrail([...trail, cursor]); setCursor(data!.next_cursor!); }}>Older</button>
      </div>
    </section>
  );
}

/** The record, refreshed every second until the task ends (the admin's view of any user's task). */
function useTaskRecord(id: string, isAdmin: boolean) {
  const [record, setRecord] = useState<any>();
  const [error, setError] = useState<string>();
  useEffect(() => {
    if (!isAdmin) return;
    let live = true;
    let timer: ReturnType<typeof setTimeout>;
    const load = async () => {
      try {
        const r = await api(`/admin/tasks/${encodeURIComponent(id)}`);
        if (!live) return;
        setRecord(r);
        if (!TERMINAL.includes(r.queue_status.status)) timer = setTimeout(load, 1000);
      } catch (e) {
        if (live) setError((e as Error).message);
      }
    };
    void load();
    return () => { live = false; clearTimeout(timer); };
  }, [id, isAdmin]);
  return { record, error };
}

/** How long a dropped event stream waits before it resumes. */
const RESUME_AFTER_MS = 1000;

/**
 * One of the user's tasks followed through its event stream: the record of each status, the
 * progress and the newest preview as they come. A dropped stream resumes after its last event.
 */
function useFollowedTask(id: string, enabled: boolean) {
  const [record, setRecord] = useState<any>();
  const [preview, setPreview] = useState<string>();
  const [following, setFollowing] = useState(false);
  const [error, setError] = useState<string>();
  useEffect(() => {
    if (!enabled) return;
    const abort = new AbortController();
    let lastEventId: string | undefined;
    let ended = false;
    const follow = async () => {
      while (!ended && !abort.signal.aborted) {
        try {
          setFollowing(true);
          await streamEvents(`/v1/tasks/${encodeURIComponent(id)}/events`, (e) => {
            lastEventId = e.id;
            if (e.event === 'status') {
              setRecord(e.data);
              if (TERMINAL.includes(e.data.queue_status.status)) ended = true;
            } else if (e.event === 'progress') {
              setRecord((r: any) => r && { ...r, queue_status: { ...r.queue_status, progress: e.data.progress } });
            } else if (e.event === 'preview') setPreview(e.data.url);
          }, { lastEventId, signal: abort.signal });
        } catch (e) {
          if (abort.signal.aborted) return;
          if (e instanceof ApiFailure) {
            setError(e.message);
            return;
          }
        }
        if (!ended) await new Promise((resolve) => setTimeout(resolve, RESUME_AFTER_MS));
      }
      setFollowing(false);
    };
    void follow();
    return () => abort.abort();
  }, [id, enabled]);
  return { record, preview, following, error };
}

/** `deliveries`: the callback deliveries are shown (administrators only). */
export function TaskDetail({ id, isAdmin, deliveries = isAdmin }: { id: string; isAdmin: boolean; deliveries?: boolean }) {
  const polled = useTaskRecord(id, isAdmin);
  const followed = useFollowedTask(id, !isAdmin);
  const { record, error } = isAdmin ? polled : followed;
  const q = record?.queue_status;
  return (
    <section>
      <h2>Task {id}</h2>
      {error && <p className="error">{error}</p>}
      {q && (
        <>
          <p>
            Status <span className={`status ${q.status}`} data-testid="task-status">{q.status}</span> · <span data-testid="task-progress">{q.progress}%</span> {q.message && `· ${q.message}`}
            {!isAdmin && followed.following && <span className="following" data-testid="task-following"> · following live</span>}
          </p>
          {!TERMINAL.includes(q.status) && followed.preview && <img className="preview" data-testid="task-preview" src={followed.preview} alt="preview" />}
          <ol className="timeline">
            <li>submitted by {record.user?._id} for {record.generate_info?.workflow?._id}</li>
            {q.data?.started_at && <li>started {when(q.data.started_at)}</li>}
            {q.data?.finished_at && <li>{q.status} {when(q.data.finished_at)}</li>}
          </ol>
          {q.original_error_message && <p className="error">{q.original_error_message}</p>}
          <h3>Outputs</h3>
          <Outputs items={q.output_content ?? []} />
          {deliveries && <Deliveries taskId={id} />}
          <h3>Record</h3>
          <pre className="record">{JSON.stringify(record, null, 2)}</pre>
        </>
      )}
    </section>
  );
}

function Deliveries({ taskId }: { taskId: string }) {
  const { data, error, reload } = useGet<{ data: any[] }>(`/admin/callbacks${query({ task_id: taskId })}`);
  const [message, setMessage] = useState('');
  const retry = async (deliveryId: string) => {
    try {
      await api(`/admin/callbacks/${encodeURIComponent(deliveryId)}/retry`, { method: 'POST' });
      setMessage(`delivery ${deliveryId} sent again`);
      // The try takes up to the callback timeout; show its outcome when it is in.
      setTimeout(reload, 500);
      setTimeout(reload, 2000);
    } catch (e) {
      setMessage((e as Error).message);
    }
  };
  return (
    <>
      <h3>Callback deliveries</h3>
      {error && <p className="error">{error}</p>}
      {data && data.data.length === 0 && <p>No callback deliveries (no callback address was set when the task ran).</p>}
      <table data-testid="deliveries">
        <thead><tr><th>#</th><th>Task status</th><th>State</th><th>Tries</th><th>Last answer</th><th></th></tr></thead>
        <tbody>
          {data?.data.map((d) => {
            const last = d.attempts[d.attempts.length - 1];
            return (
              <tr key={d.id} data-delivery={d.id}>
                <td>{d.seq}</td>
                <td>{d.task_status}</td>
                <td className={`delivery ${d.state}`}>{d.state}</td>
                <td>{d.attempts.length}</td>
                <td>{last ? (last.http_status ?? last.error) : ''}</td>
                <td>{d.state !== 'delivered' && <button onClick={() => retry(d.id)}>Retry now</button>}</td>
              </tr>
            );
          })}
        </tbody>
      </table>
      <button onClick={reload}>Refresh deliveries</button> {message && <span>{message}</span>}
    </>
  );
}
