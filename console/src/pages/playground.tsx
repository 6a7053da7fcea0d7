import { useEffect, useState } from 'react';
import { api, ApiFailure, session } from '../api.ts';
import { useGet } from '../hooks.ts';
import { Link } from '../router.tsx';
import { Outputs } from '../outputs.tsx';

interface Kind { label: string; path: string; type: string; defaultModel: string; body: (model: string, prompt: string) => Record<string, unknown> }

/** The task kinds the playground submits, each with the smallest body its route takes. */
const KINDS: Record<string, Kind> = {
  image: { label: 'Image', path: '/v1/images/generations', type: 'image_generate', defaultModel: 'seedream-4.0', body: (model, prompt) => ({ model, prompt, size: '512x512' }) },
  video: { label: 'Video', path: '/v1/video/generations', type: 'video_generate', defaultModel: '', body: (model, prompt) => ({ model, content: [{ type: 'text', text: prompt }] }) },
  speech: { label: 'Speech', path: '/v1/speech/generations', type: 'text_to_speech', defaultModel: '', body: (model, prompt) => ({ model, text: prompt, voice_id: 'default' }) },
  mesh: { label: '3D', path: '/v1/mesh3d/generate/text', type: 'text_to_model', defaultModel: 'tripo-v3.1', body: (model, prompt) => ({ model, prompt }) },
};

function modelIds(list: any, type: string): string[] {
  const items: { name: string; types: string[] }[] = list?.modelList ?? [];
  return items.filter((m) => m.types.includes(type)).map((m) => m.name);
}

/** A submitted task followed live until it ends. */
function LiveTask({ taskId }: { taskId: string }) {
  const [record, setRecord] = useState<any>();
  useEffect(() => {
    let live = true;
    let timer: ReturnType<typeof setTimeout>;
    const poll = async () => {
      const r = await api(`/v1/ai/result/${encodeURIComponent(taskId)}`).catch(() => undefined);
      if (!live) return;
      if (r) setRecord(r);
      if (!r || !['success', 'failed', 'rejected', 'cancelled'].includes(r.queue_status.status)) timer = setTimeout(poll, 500);
    };
    void poll();
    return () => { live = false; clearTimeout(timer); };
  }, [taskId]);
  const q = record?.queue_status;
  return (
    <div className="live">
      <p>Task <Link to={`tasks/${encodeURIComponent(taskId)}`}>{taskId}</Link>: <span className={`status ${q?.status ?? 'submitted'}`} data-testid="live-status">{q?.status ?? 'submitted'}</span> {q && `${q.progress}%`}</p>
      {q?.original_error_message && <p className="error">{q.original_error_message}</p>}
      {q?.status === 'success' && <Outputs items={q.output_content ?? []} />}
    </div>
  );
}

function TaskForm({ kind, models }: { kind: Kind; models: string[] }) {
  const [model, setModel] = useState(kind.defaultModel || models[0] || '');
  const [prompt, setPrompt] = useState('');
  const [body, setBody] = useState('');
  const [taskId, setTaskId] = useState<string>();
  const [error, setError] = useState('');
  useEffect(() => { if (!model && models[0]) setModel(models[0]); }, [models, model]);
  useEffect(() => setBody(JSON.stringify(kind.body(model, prompt), null, 2)), [kind, model, prompt]);
  const submit = async (e: React.FormEvent) => {
    e.preventDefault();
    setError('');
    try {
      const answer = await api(kind.path, { method: 'POST', json: JSON.parse(body), headers: { 'x-async': '1' } });
      setTaskId(answer.task_id);
    } catch (err) {
      setError(err instanceof ApiFailure ? `${err.code}: ${err.message}` : (err as Error).message);
    }
  };
  return (
    <form className="stacked" onSubmit={submit}>
      <label>Model<input list={`models-${kind.label}`} value={model} onChange={(e) => setModel(e.target.value)} name="model" /></label>
      <datalist id={`models-${kind.label}`}>{models.map((m) => <option key={m} value={m} />)}</datalist>
      <label>Prompt<textarea value={prompt} onChange={(e) => setPrompt(e.target.value)} name="prompt" rows={3} /></label>
      <label>Request body<textarea value={body} onChange={(e) => setBody(e.target.value)} rows={6} className="mono" /></label>
      <div><button type="submit">Submit</button></div>
      {error && <p className="error">{error}</p>}
      {taskId && <LiveTask key={taskId} taskId={taskId} />}
    </form>
  );
}

/** Chat completions streamed as server-sent events, shown as they arrive. */
function Chat({ models }: { models: string[] }) {
  const [model, setModel] = useState('');
  const [prompt, setPrompt] = useState('');
  const [answer, setAnswer] = useState('');
  const [error, setError] = useState('');
  const send = async (e: React.FormEvent) => {
    e.preventDefault();
    setAnswer('');
    setError('');
    const res = await fetch('/v1/chat/completions', {
      method: 'POST',
      headers: { authorization: `Bearer ${session.token()}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: model || models[0], stream: true, messages: [{ role: 'user', content: prompt }] }),
    });
    if (!res.ok || !res.body) {
      const body = await res.json().catch(() => ({}));
      setError(body?.error?.message ?? res.statusText);
      return;
    }
    const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
    let buffered = '';
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      buffered += value;
      const events = buffered.split('\n\n');
      buffered = events.pop() ?? '';
      for (const event of events) {
        const data = event.split('\n').filter((l) => l.startsWith('data:')).map((l) => l.slice(5).trim()).join('');
        if (!data || data === '[DONE]') continue;
        const chunk = JSON.parse(data);
        if (chunk.error) setError(chunk.error.message);
        const delta = chunk.choices?.[0]?.delta?.content;
        if (delta) setAnswer((a) => a + delta);
      }
    }
  };
  return (
    <form className="stacked" onSubmit={send}>
      <label>Model<input list="models-chat" value={model} placeholder={models[0]} onChange={(e) => setModel(e.target.value)} /></label>
      <datalist id="models-chat">{models.map((m) => <option key={m} value={m} />)}</datalist>
      <label>Message<textarea value={prompt} onChange={(e) => setPrompt(e.target.value)} rows={3} /></label>
      <div><button type="submit">Send</button></div>
      {error && <p className="error">{error}</p>}
      <pre className="answer" data-testid="chat-answer">{answer}</pre>
    </form>
  );
}

export function Playground() {
  const [tab, setTab] = useState('image');
  const list = useGet('/v1/models/list');
  return (
    <section>
      <h2>Playground</h2>
      <div className="tabs">
        {['chat', ...Object.keys(KINDS)].map((t) => <button key={t} className={t === tab ? 'active' : ''} onClick={() => setTab(t)}>{t === 'chat' ? 'Chat' : KINDS[t].label}</button>)}
      </div>
      {tab === 'chat' ? <Chat models={modelIds(list.data, 'text_generate')} /> : <TaskForm key={tab} kind={KINDS[tab]} models={modelIds(list.data, KINDS[tab].type)} />}
    </section>
  );
}
