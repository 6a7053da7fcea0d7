import { SettingsError } from '../../config/settings.ts';
import { readVideoInput } from '../local/video/media-input.ts';
import { checkApiKey, downloadFile, fetchableUrl, replyJson, stringOption, type AdapterContext, type AdapterFactory } from '../adapter-support.ts';
import { inputOf, type EngineDeclaration } from '../spec.ts';
import { UpstreamClient } from '../upstream-client.ts';
import { upstreamTaskEngine } from '../upstream-task-engine.ts';
import { checkVideoRequest, createTaskBody, createdTaskId, mediaRefs, taskState, videoOutput, type ParameterStyle } from './mapping.ts';

const DEFAULT_BASE_URL = 'https://ark.cn-beijing.volces.com/api/v3';

/** Seedance video only: Seedream images through Ark are not offered yet (no notes on Ark's image API). */
const ARK_SERVES: EngineDeclaration = { 'video.generations': {} };

/** Upstream reference saved for a resumed run. */
type ArkRef = { id: string };

/** options.parameter_style: Ark task fields (default) or the older inline prompt flags. */
function parameterStyle(ctx: AdapterContext): ParameterStyle {
  const value = stringOption(ctx, 'parameter_style');
  if (value === undefined || value === 'fields' || value === 'flags') return value ?? 'fields';
  throw new SettingsError(`GENGATE_CONFIG providers.${ctx.provider}.options.parameter_style: expected "fields" or "flags", got "${value}"`);
}

/**
 * Volcengine Ark (Bearer ARK_API_KEY): video.generations on Seedance → POST
 * /contents/generations/tasks, polled at GET /contents/generations/tasks/{id}, the MP4 downloaded
 * and probed. Settings go as task fields, or as prompt flags with options.parameter_style "flags";
 * options.callback_url is sent as callback_url. Seedream images are not offered through this
 * adapter (no notes on Ark's image API yet). External API: not cancellable (Ark only cancels
 * queued tasks).
 */
export const volcengineAdapter: AdapterFactory = (ctx) => {
  const baseURL = ctx.baseURL ?? DEFAULT_BASE_URL;
  const style = parameterStyle(ctx);
  const callbackUrl = stringOption(ctx, 'callback_url');
  const api = new UpstreamClient({ ...ctx.client, baseURL, fetch: ctx.fetch, headers: { authorization: `Bearer ${ctx.apiKey ?? ''}` } });
  const storage = new UpstreamClient({ ...ctx.client, baseURL, fetch: ctx.fetch });

  return upstreamTaskEngine<ArkRef>({
    check(job) {
      checkApiKey(ctx);
      checkVideoRequest(inputOf(job, 'video.generations'));
    },
    async submit(job, run) {
      const urls = new Map<string, string>();
      const input = inputOf(job, 'video.generations');
      for (const [i, ref] of mediaRefs(input).entries()) urls.set(ref, await fetchableUrl(ref, run, `input-${i + 1}`));
      const { body, dropped } = createTaskBody(input, job.model.defaultRealModelName, urls, { style, ...(callbackUrl ? { callbackUrl } : {}) });
      for (const field of dropped) run.warn(`${field} was not sent: Seedance has no use for it`);
      const res = await api.request({ path: '/contents/generations/tasks', json: body, signal: run.signal });
      return { id: createdTaskId(replyJson(res, ctx.provider, 'the video request')) };
    },
    async poll(ref, _job, run) {
      const res = await api.request({ path: `/contents/generations/tasks/${encodeURIComponent(ref.id)}`, signal: run.signal });
      const state = taskState(replyJson(res, ctx.provider, 'the video task query'));
      if (state.state !== 'succeeded') return state;
      const video = await downloadFile(storage, state.videoUrl, run.signal);
      const media = await readVideoInput(video.data, 'the upstream video', run.signal);
      return { state: 'succeeded', output: videoOutput(video.data, media, media.hasAudio, state, ref.id) };
    },
  }, { cancellable: false, pollIntervalMs: ctx.pollIntervalMs, maxWaitMs: ctx.maxWaitMs, serves: ARK_SERVES });
};
