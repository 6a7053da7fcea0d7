import { lazy, Suspense } from 'react';

const ModelViewer = lazy(() => import('./model-viewer.tsx'));

type Kind = 'image' | 'audio' | 'video' | 'model' | 'text' | 'file';

function kindOf(item: { type?: string; url?: string; content?: string }): Kind {
  const ext = (item.url ?? '').split('?')[0].split('.').pop()?.toLowerCase() ?? '';
  if (['png', 'jpg', 'jpeg', 'webp', 'gif'].includes(ext)) return 'image';
  if (['mp3', 'wav', 'ogg', 'm4a', 'flac', 'aac', 'opus'].includes(ext)) return 'audio';
  if (['mp4', 'webm', 'mov'].includes(ext)) return 'video';
  if (['glb', 'gltf'].includes(ext)) return 'model';
  if (!item.url && item.content) return 'text';
  return 'file';
}

/** A task's outputs shown as what they are: pictures, players, a 3D viewer, text. */
export function Outputs({ items }: { items: { type?: string; url?: string; content?: string; filename?: string }[] }) {
  if (items.length === 0) return <p>No outputs yet.</p>;
  return (
    <div className="outputs">
      {items.map((item, i) => {
        const kind = kindOf(item);
        return (
          <figure key={i} data-kind={kind}>
            {kind === 'image' && <img src={item.url} alt={item.filename ?? 'output'} />}
            {kind === 'audio' && <audio controls src={item.url} />}
            {kind === 'video' && <video controls src={item.url} width={480} />}
            {kind === 'model' && <Suspense fallback={<p>Loading viewer…</p>}><ModelViewer url={item.url!} /></Suspense>}
            {kind === 'text' && <pre>{item.content}</pre>}
            {item.url && <figcaption><a href={item.url} target="_blank" rel="noreferrer">{item.filename ?? item.url.split('/').pop()}</a></figcaption>}
          </figure>
        );
      })}
    </div>
  );
}
