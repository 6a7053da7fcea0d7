import type http from 'node:http';
import { setTimeout as delay } from 'node:timers/promises';
import { RecordingUpstream, sendJson, type RecordedRequest, type Reply } from './recording-upstream.ts';

/** How the fake answers one request; requests without a script answer `Echo: <last user text>`. */
export type GeminiBehaviour =
  /**
   * This text instead of the echo, with this finish reason (default STOP); with `cached`, a prompt
   * that many tokens longer, read from cached content (`cachedContentTokenCount`).
   */
  | { kind: 'text'; text: string; finishReason?: string; cached?: number }
  /** A function call part (Gemini still says STOP). */
  | { kind: 'function_call'; name: string; args: Record<string, unknown> }
  /** A prompt blocked before any candidate: promptFeedback only. */
  | { kind: 'blocked'; reason: string }
  /** Streams the text frames, then closes without the finishing frame. */
  | { kind: 'cut' }
  /** Never answers. */
  | { kind: 'hang' };

/** A Google API error answer (`{error: {code, message, status}}`), for `inject`. */
export function geminiError(code: number, status: string, message: string): Reply {
  return { status: code, body: { error: { code, message, status } } };
}

const WORD = /\s*\S+/g;
const words = (text: string) => text.split(/\s+/).filter(Boolean).length;

type Part = { text?: string; inlineData?: unknown; fileData?: unknown; functionCall?: { name: string }; functionResponse?: { name: string; response: unknown } };
type Content = { role?: string; parts?: Part[] };

function textOf(content: Content | undefined): string {
  return (content?.parts ?? []).map((p) => p.text ?? (p.functionResponse ? `<functionResponse ${JSON.stringify(p.functionResponse.response)}>` : p.inlineData ? '<inlineData>' : p.fileData ? '<fileData>' : '<part>')).join(' ');
}

const MODEL_PATH = /^\/v1beta\/models\/([^/:]+):(generateContent|streamGenerateContent)$/;

/**
 * A faithful Gemini API (`/v1beta/models/{model}:generateContent` and
 * `:streamGenerateContent?alt=sse`) on 127.0.0.1:0: it checks the key (a wrong one is 400
 * INVALID_ARGUMENT, as Google answers) and the contents (roles user/model, a function response
 * only after a turn calling that function), and streams whole responses with only the new parts,
 * cumulative usageMetadata on every frame, the finish reason on the last, and no end marker.
 */
export class GeminiUpstream extends RecordingUpstream {
  private readonly queue: GeminiBehaviour[] = [];
  private served = 0;

  private readonly apiKey: string;

  constructor(apiKey: string) {
    super();
    this.apiKey = apiKey;
  }

  script(...behaviours: GeminiBehaviour[]): void {
    this.queue.push(...behaviours);
  }

  /** The requests to one model's method (generateContent or streamGenerateContent), in order. */
  calls(model: string, method: string): RecordedRequest[] {
    return this.requestsTo(`/v1beta/models/${model}:${method}`, 'POST');
  }

  protected async handle(req: RecordedRequest, res: http.ServerResponse): Promise<void> {
    const route = MODEL_PATH.exec(req.path);
    if (req.method !== 'POST' || !route) return sendJson(res, 404, geminiError(404, 'NOT_FOUND', `no route ${req.method} ${req.path}`).body);
    if (req.headers['x-goog-api-key'] !== this.apiKey) {
      return sendJson(res, 400, { error: { code: 400, message: 'API key not valid. Please pass a valid API key.', status: 'INVALID_ARGUMENT', details: [{ '@type': 'type.googleapis.com/google.rpc.ErrorInfo', reason: 'API_KEY_INVALID', domain: 'googleapis.com' }] } });
    }
    const stream = route[2] === 'streamGenerateContent';
    if (stream && req.query.alt !== 'sse') return sendJson(res, 400, geminiError(400, 'INVALID_ARGUMENT', 'this fake streams only with alt=sse').body);
    const body = req.json as { contents?: Content[] } | undefined;
    const problem = this.check(body);
    if (problem) return sendJson(res, 400, geminiError(400, 'INVALID_ARGUMENT', problem).body);
    const behaviour = this.queue.shift();
    if (behaviour?.kind === 'hang') return;
    await this.answer(route[1]!, body!.contents!, stream, behaviour, res);
  }

  private check(body: { contents?: Content[] } | undefined): string | undefined {
    if (!body || !Array.isArray(body.contents) || body.contents.length === 0) return '* GenerateContentRequest.contents: contents is not specified';
    for (let i = 0; i < body.contents.length; i++) {
      const { role, parts } = body.contents[i]!;
      if (role !== 'user' && role !== 'model') return `* GenerateContentRequest.contents[${i}].role: must be user or model`;
      if (!Array.isArray(parts) || parts.length === 0) return `* GenerateContentRequest.contents[${i}].parts: contents.parts must not be empty`;
      for (const part of parts) {
        if (!part.functionResponse) continue;
        const called = body.contents[i - 1]?.parts?.some((p) => p.functionCall?.name === part.functionResponse!.name);
        if (!called) return `* GenerateContentRequest.contents[${i}]: function response ${part.functionResponse.name} answers no function call of the turn before`;
        if (typeof part.functionResponse.response !== 'object' || part.functionResponse.response === null) return `* GenerateContentRequest.contents[${i}].parts.function_response.response: must be an object`;
      }
    }
    return undefined;
  }

  private async answer(model: string, contents: Content[], stream: boolean, behaviour: GeminiBehaviour | undefined, res: http.ServerResponse): Promise<void> {
    const responseId = `resp-fake${++this.served}`;
    const modelVersion = `${model}-001`;
    const lastUser = [...contents].reverse().find((c) => c.role === 'user');
    const text = behaviour?.kind === 'text' ? behaviour.text : behaviour?.kind === 'function_call' || behaviour?.kind === 'blocked' ? '' : `Echo: ${textOf(lastUser)}`;
    const call = behaviour?.kind === 'function_call' ? { functionCall: { name: behaviour.name, args: behaviour.args } } : undefined;
    const finishReason = behaviour?.kind === 'text' && behaviour.finishReason ? behaviour.finishReason : 'STOP';
    const cached = behaviour?.kind === 'text' ? behaviour.cached : undefined;
    // Gemini's promptTokenCount includes the cached content's tokens.
    const promptTokenCount = contents.reduce((sum, c) => sum + words(textOf(c)), 0) + (cached ?? 0);
    const cache = cached !== undefined ? { cachedContentTokenCount: cached, cacheTokensDetails: [{ modality: 'TEXT', tokenCount: cached }] } : {};
    const candidatesTokenCount = Math.max(1, words(text) + (call ? words(JSON.stringify(call.functionCall.args)) : 0));
    const usage = (candidates: number | undefined) => ({ promptTokenCount, ...(candidates !== undefined ? { candidatesTokenCount: candidates } : {}), totalTokenCount: promptTokenCount + (candidates ?? 0), promptTokensDetails: [{ modality: 'TEXT', tokenCount: promptTokenCount }], ...cache });

    if (behaviour?.kind === 'blocked') {
      const blocked = { promptFeedback: { blockReason: behaviour.reason }, usageMetadata: usage(undefined), modelVersion, responseId };
      if (!stream) return sendJson(res, 200, blocked);
      res.writeHead(200, { 'content-type': 'text/event-stream', 'content-disposition': 'attachment' });
      res.end(`data: ${JSON.stringify(blocked)}\r\n\r\n`);
      return;
    }
    if (!stream) {
      const parts = [...(text ? [{ text }] : []), ...(call ? [call] : [])];
      sendJson(res, 200, { candidates: [{ content: { parts, role: 'model' }, finishReason, avgLogprobs: -0.01 }], usageMetadata: usage(candidatesTokenCount), modelVersion, responseId });
      return;
    }
    res.writeHead(200, { 'content-type': 'text/event-stream', 'content-disposition': 'attachment' });
    res.flushHeaders();
    const frames: { parts: Part[]; last: boolean }[] = [];
    const pieces = text.match(WORD) ?? [];
    pieces.forEach((piece) => frames.push({ parts: [{ text: piece }], last: false }));
    if (call) frames.push({ parts: [call], last: false });
    if (frames.length === 0) frames.push({ parts: [{ text: '' }], last: false });
    frames[frames.length - 1]!.last = true;
    let produced = 0;
    for (const frame of frames) {
      if (frame.last && behaviour?.kind === 'cut') break;
      produced += frame.parts.reduce((sum, p) => sum + (p.text !== undefined ? words(p.text) : 1), 0);
      const candidate = { content: { parts: frame.parts, role: 'model' }, ...(frame.last ? { finishReason } : {}), index: 0 };
      // Google's own spacing; clients must not depend on it.
      res.write(`data: ${JSON.stringify({ candidates: [candidate], usageMetadata: usage(frame.last ? candidatesTokenCount : produced), modelVersion, responseId }).replace(/":/g, '": ')}\r\n\r\n`);
      await delay(1);
    }
    res.end();
  }
}
