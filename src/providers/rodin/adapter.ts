import { checkApiKey, downloadFile, replyJson, type AdapterFactory } from '../adapter-support.ts';
import { UpstreamClient } from '../upstream-client.ts';
import { upstreamTaskEngine } from '../upstream-task-engine.ts';
import { RODIN_SERVES, checkJob, downloadList, generationJob, resultFiles, rodinForm, statusState, submitted } from './mapping.ts';

const DEFAULT_BASE_URL = 'https://api.hyper3d.com/api/v2';

/** Saved with the task: Rodin's task uuid (the history keeps it) and the key its status is read with. */
type RodinRef = { provider: string; task_id: string; subscription_key: string };

/**
 * Hyper3D Rodin (family B): POST /rodin (multipart, images uploaded as files), polled with
 * POST /status, results listed by POST /download and downloaded. External API: not cancellable.
 */
export const rodinAdapter: AdapterFactory = (ctx) => {
  const baseURL = ctx.baseURL ?? DEFAULT_BASE_URL;
  const api = new UpstreamClient({ ...ctx.client, baseURL, fetch: ctx.fetch, headers: { authorization: `Bearer ${ctx.apiKey ?? ''}` } });
  // Result links point at storage hosts: no API key goes there.
  const storage = new UpstreamClient({ ...ctx.client, baseURL, fetch: ctx.fetch });

  return upstreamTaskEngine<RodinRef>({
    check(job) {
      checkJob(job);
      checkApiKey(ctx);
    },
    async submit(job, run) {
      const { fields, images, warnings } = rodinForm(generationJob(job));
      for (const warning of warnings) run.warn(warning);
      const form = new FormData();
      for (const [i, ref] of images.entries()) {
        const file = await run.readInput(ref);
        const ext = /\.([a-z0-9]+)$/i.exec(file.fileName)?.[1] ?? file.mimeType.split('/')[1] ?? 'png';
        form.append('images', new Blob([new Uint8Array(file.data)], { type: file.mimeType }), `image-${i}.${ext}`);
      }
      for (const [name, value] of fields) form.append(name, value);
      const res = await api.request({ path: '/rodin', body: form, signal: run.signal });
      const { uuid, subscriptionKey } = submitted(replyJson(res, ctx.provider, 'the generation'));
      return { provider: ctx.provider, task_id: uuid, subscription_key: subscriptionKey };
    },
    async poll(ref, job, run) {
      const status = await api.request({ path: '/status', json: { subscription_key: ref.subscription_key }, signal: run.signal, idempotent: true });
      const state = statusState(replyJson(status, ctx.provider, 'the status query'));
      if (state.state !== 'done') return state;
      const listed = await api.request({ path: '/download', json: { task_uuid: ref.task_id }, signal: run.signal, idempotent: true });
      const results = await Promise.all(downloadList(replyJson(listed, ctx.provider, 'the download request')).map(async (r) => ({ name: r.name, data: (await downloadFile(storage, r.url, run.signal)).data })));
      const format = generationJob(job).input.geometry_file_format;
      return { state: 'succeeded', output: { files: resultFiles(results, format) } };
    },
  }, { cancellable: false, pollIntervalMs: ctx.pollIntervalMs, maxWaitMs: ctx.maxWaitMs, serves: RODIN_SERVES });
};
