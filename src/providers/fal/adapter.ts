import { checkApiKey, downloadFile, fetchableUrl, replyJson, type AdapterFactory } from '../adapter-support.ts';
import { UpstreamClient } from '../upstream-client.ts';
import { upstreamTaskEngine } from '../upstream-task-engine.ts';
import { FAL_SERVES, endpointIdOf, errorText, falInput, falJob, imageRefs, queueState, resultFile, resultLinks, submitted } from './mapping.ts';

const DEFAULT_BASE_URL = 'https://queue.fal.run';

/** Saved with the task: fal's request id (the history keeps it) and the URLs the queue said to follow. */
type FalRef = { provider: string; task_id: string; status_url: string; response_url: string };

/**
 * fal.ai's queue for hosted Tripo (family D): POST {queue}/{endpoint id} with `Authorization:
 * Key …`, then the status and response URLs the submit answered. Images go by public URL.
 * External API: not cancellable, though fal's queue could cancel.
 */
export const falAdapter: AdapterFactory = (ctx) => {
  const baseURL = ctx.baseURL ?? DEFAULT_BASE_URL;
  const api = new UpstreamClient({ ...ctx.client, baseURL, fetch: ctx.fetch, headers: { authorization: `Key ${ctx.apiKey ?? ''}` }, errorMessage: errorText });
  // Result files live on fal's CDN: the key does not go there.
  const storage = new UpstreamClient({ ...ctx.client, baseURL, fetch: ctx.fetch });

  return upstreamTaskEngine<FalRef>({
    check(job) {
      endpointIdOf(falJob(job));
      checkApiKey(ctx);
    },
    async submit(generation, run) {
      const job = falJob(generation);
      const urls: string[] = [];
      for (const ref of imageRefs(job)) urls.push(await fetchableUrl(ref, run, 'image.png'));
      const input = falInput(job, urls);
      const res = await api.request({ path: `/${endpointIdOf(job)}`, json: input, signal: run.signal });
      const queued = submitted(replyJson(res, ctx.provider, 'the queue submit'));
      return { provider: ctx.provider, task_id: queued.requestId, status_url: queued.statusUrl, response_url: queued.responseUrl };
    },
    async poll(ref, _job, run) {
      const state = queueState(replyJson(await api.request({ path: ref.status_url, signal: run.signal }), ctx.provider, 'the status query'));
      if (state.state !== 'completed') return state;
      const links = resultLinks(replyJson(await api.request({ path: ref.response_url, signal: run.signal }), ctx.provider, 'the result query'));
      const files = await Promise.all(links.map(async (link) => resultFile(link, (await downloadFile(storage, link.url, run.signal)).data)));
      return { state: 'succeeded', output: { files } };
    },
  }, { cancellable: false, pollIntervalMs: ctx.pollIntervalMs, maxWaitMs: ctx.maxWaitMs, serves: FAL_SERVES });
};
