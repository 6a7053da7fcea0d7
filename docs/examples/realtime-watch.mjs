// Opens a realtime session, submits an image task and prints every message until the task's
// success arrives. Run from the repository's root with GG (base URL) and T (an API token) set:
//   node docs/examples/realtime-watch.mjs
import WebSocket from 'ws';

const base = process.env.GG ?? 'http://127.0.0.1:8080';
const token = process.env.T;
if (!token) throw new Error('set T to an API token');
const clientId = 'kiosk-7';

const ws = new WebSocket(`${base.replace(/^http/, 'ws')}/realtime?channel=draw&client_id=${clientId}`);
const send = (message) => ws.send(JSON.stringify(message));
const timer = setTimeout(() => { console.error('no success push within 60 s'); process.exit(1); }, 60_000);

ws.on('message', async (raw) => {
  const message = JSON.parse(raw.toString());
  console.log(message.type === 'task.status' ? `task.status ${message.taskId}: ${message.data.queue_status.status}` : JSON.stringify(message));
  switch (message.type) {
    case 'session.challenge':
      send({ type: 'session.initialize', protocolVersion: '1.0', client: 'realtime-watch example' });
      break;
    case 'session.initialized':
      send({ type: 'session.authenticate', method: 'bearer', credential: `Bearer ${token}` });
      break;
    case 'session.ready': {
      // The task goes to this user's sessions with client_id kiosk-7 only.
      const res = await fetch(`${base}/v1/images/generations`, {
        method: 'POST',
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', 'x-async': '1', 'x-client-id': clientId },
        body: JSON.stringify({ model: 'seedream-4.0', prompt: 'a lighthouse at night', size: '256x256' }),
      });
      console.log('submitted', JSON.stringify(await res.json()));
      break;
    }
    case 'task.status':
      if (message.data.queue_status.status === 'success') {
        console.log('output', message.data.queue_status.data.output[0]);
        clearTimeout(timer);
        ws.close();
      }
      break;
    case 'session.error':
      process.exitCode = 1;
      break;
  }
});
ws.on('close', (code) => console.log('closed', code));
