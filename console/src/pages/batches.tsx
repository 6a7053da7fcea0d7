import { useState } from 'react';
import { query, session } from '../api.ts';
import { useGet, when } from '../hooks.ts';

interface Batch {
  id: string;
  user_id?: string;
  endpoint: string;
  status: string;
  created_at: number;
  completed_at: number | null;
  output_file_id: string | null;
  error_file_id: string | null;
  request_counts: { total: number; completed: number; failed: number };
  errors: { data: { code: string; message: string }[] } | null;
}

/** Downloads a file of /openai/v1/files with the signed-in token (a plain link would carry none). */
async function download(path: string, name: string): Promise<void> {
  const res = await fetch(path, { headers: { authorization: `Bearer ${session.token()}` } });
  if (!res.ok) throw new Error(`download failed: ${res.status}`);
  const url = URL.createObjectURL(await res.blob());
  const link = document.createElement('a');
  link.href = url;
  link.download = name;
  link.click();
  setTimeout(() => URL.revokeObjectURL(url), 10_000);
}

function FileLink({ id, label, isAdmin }: { id: string | null; label: string; isAdmin: boolean }) {
  const [error, setError] = useState<string>();
  if (!id) return null;
  const path = isAdmin ? `/admin/files/${encodeURIComponent(id)}/content` : `/openai/v1/files/${encodeURIComponent(id)}/content`;
  return (
    <>
      <button className="link" data-testid={`${label}-file`} title={id} onClick={() => download(path, `${id}.jsonl`).catch((e: Error) => setError(e.message))}>{label}</button>
      {error && <span className="error"> {error}</span>}
    </>
  );
}

/** The batches of /openai/v1/batches: the caller's, or every user's for the admin, with their counts and files. */
export function Batches({ isAdmin }: { isAdmin: boolean }) {
  const [after, setAfter] = useState<string | undefined>();
  const [trail, setTrail] = useState<(string | undefined)[]>([]);
  const { data, error, reload } = useGet<{ data: Batch[]; has_more: boolean; last_id: string | null }>(`${isAdmin ? '/admin/batches' : '/openai/v1/batches'}${query({ limit: 50, after })}`);
  return (
    <section>
      <h2>Batches</h2>
      <button onClick={reload}>Refresh</button>
      {error && <p className="error">{error}</p>}
      <table data-testid="batches-table">
        <thead><tr><th>Created</th><th>Batch</th>{isAdmin && <th>User</th>}<th>Endpoint</th><th>Status</th><th>Total</th><th>Completed</th><th>Failed</th><th>Files</th></tr></thead>
        <tbody>
          {data?.data.map((b) => (
            <tr key={b.id} data-testid={`batch-${b.id}`}>
              <td>{when(b.created_at * 1000)}</td><td>{b.id}</td>{isAdmin && <td>{b.user_id}</td>}<td>{b.endpoint}</td>
              <td><span className={`status ${b.status}`} title={b.errors?.data.map((e) => `${e.code}: ${e.message}`).join('\n')}>{b.status}</span></td>
              <td>{b.request_counts.total}</td><td>{b.request_counts.completed}</td><td>{b.request_counts.failed}</td>
              <td><FileLink id={b.output_file_id} label="output" isAdmin={isAdmin} /> <FileLink id={b.error_file_id} label="errors" isAdmin={isAdmin} /></td>
            </tr>
          ))}
        </tbody>
      </table>
      {data && data.data.length === 0 && <p>No batches.</p>}
      <div className="pager">
        <button disabled={trail.length === 0} onClick={() => { setAfter(trail[trail.length - 1]); setTrail(trail.slice(0, -1)); }}>Newer</button>
        <button disabled={!data?.has_more} onClick={() => { setTrail([...trail, after]); setAfter(data!.last_id ?? undefined); }}>Older</button>
      </div>
    </section>
  );
}
