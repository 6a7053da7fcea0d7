import http from 'node:http';
import type { AddressInfo } from 'node:net';

/** A chat call the fake received, answered when the test opens the gate for it. */
export interface HeldCall {
  /** The text of the call's last message. */
  text: string;
  answer(): void;
}

/**
 * An OpenAI-compatible chat upstream whose answers wait at a gate: while it is closed, calls are
 * held (the test counts them, answers them one by one or lets them all through). Counts the
 * calls in flight at once, the most there ever were, and every text received in order.
 */
export interface GatedChatUpstream {
  /** Base URL to configure, ending in /v1. */
  url: string;
  /** The last message's text of every call received, in order. */
  received: string[];
  /** Calls held now. */
  held(): HeldCall[];
  /** The most calls in flight at once. */
  maxInFlight(): number;
  /** Answers every call from now on at once (and the held ones). */
  open(): void;
  /** Holds calls again from now on. */
  close(): void;
  stop(): Promise<void>;
}

function lastText(body: { messages?: { content?: unknown }[] }): string {
  const content = body.messages?.at(-1)?.content;
  return typeof content === 'string' ? content : JSON.stringify(content);
}

export async function startGatedChatUpstream(): Promise<GatedChatUpstream> {
  const received: string[] = [];
  let held: HeldCall[] = [];
  let inFlight = 0;
  let most = 0;
  let gateOpen = false;
  const server = http.createServer((req, res) => {
    let raw = '';
    req.on('data', (d) => (raw += d));
    req.on('end', () => {
      const body = JSON.parse(raw || '{}') as { model?: string; messages?: { content?: unknown }[] };
      const text = lastText(body);
      received.push(text);
      inFlight += 1;
      most = Math.max(most, inFlight);
      let answered = false;
      const call: HeldCall = {
        text,
        answer() {
          if (answered) return;
          answered = true;
          inFlight -= 1;
          held = held.filter((c) => c !== call);
          if (res.destroyed) return;
          res.writeHead(200, { 'content-type': 'application/json' });
          res.end(JSON.stringify({
            id: `chatcmpl-${received.length}`,
            object: 'chat.completion',
            created: 1_700_000_000,
            model: body.model ?? 'model',
            choices: [{ index: 0, message: { role: 'assistant', content: `Answer to ${text}` }, finish_reason: 'stop', logprobs: null }],
            usage: { prompt_tokens: 3, completion_tokens: 4, total_tokens: 7 },
          }));
        },
      };
      // A caller killed while held: its call no longer counts as in flight.
      res.on('close', () => {
        if (answered) return;
        answered = true;
        inFlight -= 1;
        held = held.filter((c) => c !== call);
      });
      if (gateOpen) call.answer();
      else held.push(call);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}/v1`,
    received,
    held: () => [...held],
    maxInFlight: () => most,
    open() {
      gateOpen = true;
      for (const call of [...held]) call.answer();
    },
    close() {
      gateOpen = false;
    },
    async stop() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
