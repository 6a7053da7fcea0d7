import { createHmac } from 'node:crypto';
import { readVideoInput } from '../local/video/media-input.ts';
import { downloadFile, fetchableUrl, replyJson, stringOption, type AdapterContext, type AdapterFactory } from '../adapter-support.ts';
import { inputOf, TaskRejectedError, type EngineDeclaration, type MediaSize, type RunContext } from '../spec.ts';
import { UpstreamClient } from '../upstream-client.ts';
import { upstreamTaskEngine } from '../upstream-task-engine.ts';
import { checkKlingRequest, createdTaskId, errorText, klingRequest, mediaRefs, taskState, type KlingFamily } from './mapping.ts';

const DEFAULT_BASE_URL = 'https://api-singapore.klingai.com';

/** Video only; fields Kling has no use for are the run's warnings. */
const KLING_SERVES: EngineDeclaration = { 'video.generations': {} };

/** A token lives 30 minutes; a new one is signed for every request. */
const TOKEN_LIFETIME_S = 1800;
/** nbf a little in the past, so a clock slightly ahead of Kling's does not make the token early. */
const NOT_BEFORE_SLACK_S = 5;

/** Upstream reference saved for a resumed run: the family it was created in and its task id. */
type KlingRef = { family: KlingFamily; task_id: string };

const base64url = (value: string | Buffer) => Buffer.from(value).toString('base64url');

/** The HS256 JWT Kling takes as Bearer: iss = access key, exp and nbf in seconds, signed with the secret key. */
export function klingToken(accessKey: string, secretKey: string, nowSeconds = Math.floor(Date.now() / 1000)): string {
  const header = base64url(JSON.stringify({ alg: 'HS256', typ: 'JWT' }));
  const claims = base64url(JSON.stringify({ iss: accessKey, exp: nowSeconds + TOKEN_LIFETIME_S, nbf: nowSeconds - NOT_BEFORE_SLACK_S }));
  const signature = createHmac('sha256', secretKey).update(`${header}.${claims}`).digest('base64url');
  return `${header}.${claims}.${signature}`;
}

/** The key pair from the api_key_env variable, `ACCESS_KEY:SECRET_KEY`. */
function keysOf(ctx: AdapterContext): { accessKey: string; secretKey: string } | undefined {
  const colon = ctx.apiKey?.indexOf(':') ?? -1;
  if (!ctx.apiKey || colon <= 0 || colon === ctx.apiKey.length - 1) return undefined;
  return { accessKey: ctx.apiKey.slice(0, colon), secretKey: ctx.apiKey.slice(colon + 1) };
}

/** What Kling takes for an image reference: an http(s) URL as it is, anything else as raw base64. */
async function imageValue(ref: string, run: RunContext): Promise<string> {
  if (/^https?:\/\//i.test(ref.trim())) return ref.trim();
  return (await run.readInput(ref)).data.toString('base64');
}

/**
 * Kling AI video (JWT from an access and a secret key): text2video, image2video (first and
 * last frame) and omni-video for omni models, polled at GET /v1/videos/<family>/{task_id}, the
 * MP4 downloaded and probed. options.callback_url is sent as callback_url. External API: not
 * cancellable (Kling has no cancel).
 */
export const klingAdapter: AdapterFactory = (ctx) => {
  const baseURL = ctx.baseURL ?? DEFAULT_BASE_URL;
  const keys = keysOf(ctx);
  const callbackUrl = stringOption(ctx, 'callback_url');
  const api = new UpstreamClient({ ...ctx.client, baseURL, fetch: ctx.fetch, errorMessage: errorText });
  const storage = new UpstreamClient({ ...ctx.client, baseURL, fetch: ctx.fetch });
  const auth = () => ({ authorization: `Bearer ${klingToken(keys!.accessKey, keys!.secretKey)}` });

  return upstreamTaskEngine<KlingRef>({
    check(job) {
      if (!keys) throw new TaskRejectedError(`provider ${ctx.provider} has no key pair (set the variable named by api_key_env to ACCESS_KEY:SECRET_KEY)`);
      checkKlingRequest(inputOf(job, 'video.generations'), job.model);
    },
    async submit(job, run) {
      const input = inputOf(job, 'video.generations');
      const refs = mediaRefs(input);
      const values = new Map<string, string>();
      for (const ref of refs.images) values.set(ref, await imageValue(ref, run));
      for (const [i, ref] of refs.videos.entries()) values.set(ref, await fetchableUrl(ref, run, `video-${i + 1}.mp4`));
      const { family, body, warnings } = klingRequest(input, job.model, values, callbackUrl);
      for (const warning of warnings) run.warn(warning);
      const res = await api.request({ path: `/v1/videos/${family}`, json: body, headers: auth(), signal: run.signal });
      return { family, task_id: createdTaskId(replyJson(res, ctx.provider, 'the video request')) };
    },
    async poll(ref, _job, run) {
      const res = await api.request({ path: `/v1/videos/${ref.family}/${encodeURIComponent(ref.task_id)}`, headers: auth(), signal: run.signal });
      const state = taskState(replyJson(res, ctx.provider, 'the task query'));
      if (state.state !== 'succeeded') return state;
      const video = await downloadFile(storage, state.videoUrl, run.signal);
      const media = await readVideoInput(video.data, 'the upstream video', run.signal);
      const mediaSize: MediaSize = { type: 'video', width: media.width, height: media.height, status: 1 };
      return {
        state: 'succeeded',
        output: {
          files: [{ type: 'video', data: video.data, fileName: 'video.mp4', mimeType: 'video/mp4', mediaSize, hasAudio: media.hasAudio }],
          extra: { upstream_task_id: ref.task_id, ...(state.units !== undefined ? { kling_units: state.units } : {}) },
        },
      };
    },
  }, { cancellable: false, pollIntervalMs: ctx.pollIntervalMs, maxWaitMs: ctx.maxWaitMs, serves: KLING_SERVES });
};
