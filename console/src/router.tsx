import { useEffect, useState } from 'react';

/** The page and its id from the location hash: #/tasks/abc → ['tasks', 'abc']. */
function current(): [string, string | undefined] {
  const [page = '', id] = location.hash.replace(/^#\/?/, '').split('/');
  return [page, id ? decodeURIComponent(id) : undefined];
}

export function useRoute(): [string, string | undefined] {
  const [route, setRoute] = useState(current);
  useEffect(() => {
    const changed = () => setRoute(current());
    window.addEventListener('hashchange', changed);
    return () => window.removeEventListener('hashchange', changed);
  }, []);
  return route;
}

export function Link({ to, children, className }: { to: string; children: React.ReactNode; className?: string }) {
  return <a href={`#/${to}`} className={className}>{children}</a>;
}

export const go = (to: string) => { location.hash = `#/${to}`; };
