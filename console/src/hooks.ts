import { useCallback, useEffect, useState } from 'react';
import { api } from './api.ts';

/** GETs a path (again when it changes or on reload()); null path: nothing. */
export function useGet<T = any>(path: string | null): { data: T | undefined; error: string | undefined; reload: () => void } {
  const [data, setData] = useState<T>();
  const [error, setError] = useState<string>();
  const [round, setRound] = useState(0);
  useEffect(() => {
    if (path === null) return;
    let live = true;
    api<T>(path).then((d) => { if (live) { setData(d); setError(undefined); } }, (e: Error) => { if (live) setError(e.message); });
    return () => { live = false; };
  }, [path, round]);
  return { data, error, reload: useCallback(() => setRound((r) => r + 1), []) };
}

export const when = (value: string | number | undefined | null) => {
  if (value === undefined || value === null || value === '') return '';
  const date = typeof value === 'number' ? new Date(value) : new Date(value);
  return date.toISOString().replace('T', ' ').slice(0, 19);
};
