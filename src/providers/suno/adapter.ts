import { checkApiKey, downloadFile, replyJson, stringOption, type AdapterFactory } from '../adapter-support.ts';
import { inputOf, type EngineDeclaration, type GenerationJob } from '../spec.ts';
import { UpstreamClient } from '../upstream-client.ts';
import { upstreamTaskEngine } from '../upstream-task-engine.ts';
import { generateBody, songOutput, submittedTaskId, taskState } from './mapping.ts';

const DEFAULT_BASE_URL = 'https://api.sunoapi.org';

/**
 * The upstream requires callBackUrl even from clients that poll. Without options.callback_url the
 * gateway sends an address under the reserved `.invalid` domain: it never resolves, so no request
 * data reaches a third party, and results are read by polling anyway.
 */
export const PLACEHOLDER_CALLBACK_URL = 'https://suno-callback.invalid/gengate';

/** Songs, every field of the request (the mapping drops what description mode ignores). */
const SUNO_SERVES: EngineDeclaration = { 'song.generations': {} };

/** Upstream reference saved for a resumed run. */
type SunoRef = { taskId: string };

/**
 * Suno-style music API (sunoapi.org shape, Bearer key): song.generations → POST /api/v1/generate,
 * polled at GET /api/v1/generate/record-info; both tracks (and their covers) are downloaded.
 * External API: not cancellable.
 */
export const sunoAdapter: AdapterFactory = (ctx) => {
  const baseURL = ctx.baseURL ?? DEFAULT_BASE_URL;
  const api = new UpstreamClient({ ...ctx.client, baseURL, fetch: ctx.fetch, headers: { authorization: `Bearer ${ctx.apiKey ?? ''}` } });
  // Result files live on other hosts: no credentials go there.
  const storage = new UpstreamClient({ ...ctx.client, baseURL, fetch: ctx.fetch });
  const callBackUrl = stringOption(ctx, 'callback_url') ?? PLACEHOLDER_CALLBACK_URL;
  const requestOf = (job: GenerationJob) => generateBody(inputOf(job, 'song.generations'), job.model.defaultRealModelName, callBackUrl);

  return upstreamTaskEngine<SunoRef>({
    check(job) {
      checkApiKey(ctx);
      requestOf(job);
    },
    async submit(job, run) {
      const { body, dropped } = requestOf(job);
      for (const field of dropped) run.warn(`${field} was not sent: the upstream reads it in custom mode only (customMode is off)`);
      const res = await api.request({ path: '/api/v1/generate', json: body, signal: run.signal });
      return { taskId: submittedTaskId(replyJson(res, ctx.provider, 'the song request')) };
    },
    async poll(ref, job, run) {
      const res = await api.request({ path: '/api/v1/generate/record-info', query: { taskId: ref.taskId }, signal: run.signal });
      const state = taskState(replyJson(res, ctx.provider, 'the task record query'));
      if (state.state !== 'succeeded') return state;
      const audio = await Promise.all(state.tracks.map((t) => downloadFile(storage, t.audioUrl, run.signal)));
      // A cover is a nicety: a song is delivered without the picture it could not fetch.
      const covers = await Promise.all(state.tracks.map(async (t) => {
        if (!t.imageUrl) return undefined;
        try {
          return await downloadFile(storage, t.imageUrl, run.signal);
        } catch (err) {
          ctx.logger.warn({ taskId: job.taskId, err: (err as Error).message }, 'a song cover could not be downloaded');
          return undefined;
        }
      }));
      return { state: 'succeeded', output: songOutput(state.tracks, audio, covers) };
    },
  }, { cancellable: false, pollIntervalMs: ctx.pollIntervalMs, maxWaitMs: ctx.maxWaitMs, serves: SUNO_SERVES });
};
