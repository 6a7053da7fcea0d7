import { SettingsError } from '../../config/settings.ts';
import { readVideoInput } from '../local/video/media-input.ts';
import { checkApiKey, downloadFile, fetchableUrl, imageFile, replyJson, stringOption, type AdapterContext, type AdapterFactory } from '../adapter-support.ts';
import { inputOf, TaskFailedError, type EngineDeclaration, type GenerationJob, type GenerationOutput, type RunContext } from '../spec.ts';
import { UpstreamClient } from '../upstream-client.ts';
import { upstreamTaskEngine } from '../upstream-task-engine.ts';
import {
  SEEDREAM_FIELDS, SEEDREAM_MAX_INPUT_IMAGES, arkErrorText, checkSeedreamRequest, checkVideoRequest, createTaskBody, createdTaskId, mediaRefs, seedreamBody, seedreamReply,
  taskState, videoOutput, type ParameterStyle,
} from './mapping.ts';

const DEFAULT_BASE_URL = 'https://ark.cn-beijing.volces.com/api/v3';

/** Seedance video (every field; what Seedance has no use for is the run's warnings) and Seedream images. */
const ARK_SERVES: EngineDeclaration = {
  'video.generations': {},
  'images.generations': { fields: SEEDREAM_FIELDS },
  'images.edits': { fields: SEEDREAM_FIELDS, refused: ['mask'], limits: { maxInputImages: SEEDREAM_MAX_INPUT_IMAGES } },
};

/** Saved before an images request goes out: a run resumed after a restart must not send (and pay for) it twice. */
const SEEDREAM_SAVED_KEY = 'seedream';

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
 * options.callback_url is sent as callback_url. Images on Seedream → one POST
 * /images/generations (reference images, a group of up to n images), the image URLs downloaded.
 * External API: not cancellable (Ark only cancels queued video tasks).
 */
export const volcengineAdapter: AdapterFactory = (ctx) => {
  const baseURL = ctx.baseURL ?? DEFAULT_BASE_URL;
  const style = parameterStyle(ctx);
  const callbackUrl = stringOption(ctx, 'callback_url');
  const api = new UpstreamClient({ ...ctx.client, baseURL, fetch: ctx.fetch, headers: { authorization: `Bearer ${ctx.apiKey ?? ''}` }, errorMessage: arkErrorText });
  const storage = new UpstreamClient({ ...ctx.client, baseURL, fetch: ctx.fetch });

  const video = upstreamTaskEngine<ArkRef>({
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

  /** The typed input of an images job and its reference images. */
  function imagesJob(job: GenerationJob) {
    if (job.endpoint === 'images.edits') {
      const input = inputOf(job, 'images.edits');
      return { input, refs: input.image };
    }
    return { input: inputOf(job, 'images.generations'), refs: [] };
  }

  /** Seedream: one synchronous request; the group's images downloaded, the ones it could not make listed as warnings. */
  async function runImages(job: GenerationJob, run: RunContext): Promise<GenerationOutput> {
    if (job.saved?.[SEEDREAM_SAVED_KEY]) throw new TaskFailedError('the request to Seedream was interrupted by a restart; it is not sent again because it may already have been billed');
    const { input, refs } = imagesJob(job);
    // Ark takes URLs and data URIs; an asset hash is read and sent as a data URI.
    const images: string[] = [];
    for (const ref of refs) {
      if (/^(https?:|data:)/i.test(ref.trim())) images.push(ref.trim());
      else {
        const file = await run.readInput(ref);
        images.push(`data:${file.mimeType};base64,${file.data.toString('base64')}`);
      }
    }
    await run.remember({ [SEEDREAM_SAVED_KEY]: { sent_at: Date.now() } });
    const res = await api.request({ path: '/images/generations', json: seedreamBody(input, job.model.defaultRealModelName, images), signal: run.signal });
    const reply = seedreamReply(replyJson(res, ctx.provider, 'the images request'));
    for (const failed of reply.failed) run.warn(`image ${failed.index + 1} of the group was not made: ${failed.code}: ${failed.message}`);
    const files = [];
    for (const [i, url] of reply.urls.entries()) files.push(await imageFile((await downloadFile(storage, url, run.signal)).data, i, 'seedream reply'));
    return { files, ...(reply.usage ? { usage: reply.usage } : {}) };
  }

  const isImages = (job: GenerationJob) => job.endpoint === 'images.generations' || job.endpoint === 'images.edits';
  return {
    cancellable: false,
    serves: ARK_SERVES,
    check(job) {
      if (!isImages(job)) return video.check!(job);
      checkApiKey(ctx);
      const { input, refs } = imagesJob(job);
      checkSeedreamRequest(input, refs.length, job.model);
    },
    run: (job, run) => (isImages(job) ? runImages(job, run) : video.run(job, run)),
  };
};
