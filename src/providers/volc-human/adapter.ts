import { SettingsError } from '../../config/settings.ts';
import { DIGITAL_HUMAN_CREATE, DIGITAL_HUMAN_GENERATIONS } from '../../endpoints/digital-human-engines.ts';
import { readVideoInput } from '../local/video/media-input.ts';
import { downloadFile, fetchableUrl, replyJson, stringOption, type AdapterContext, type AdapterFactory } from '../adapter-support.ts';
import { TaskRejectedError, inputOf, type EngineDeclaration, type GenerationJob, type RunContext } from '../spec.ts';
import { UpstreamClient } from '../upstream-client.ts';
import { upstreamTaskEngine } from '../upstream-task-engine.ts';
import {
  createOutput,
  generationBody,
  generationOutput,
  generationPlan,
  resultState,
  resultVideoUrl,
  submittedTaskId,
  trainedResourceId,
  trainingBody,
} from './mapping.ts';
import { signRequest, type VolcCredentials } from './signing.ts';

const DEFAULT_BASE_URL = 'https://visual.volcengineapi.com';
const DEFAULT_REGION = 'cn-north-1';
const DEFAULT_SERVICE = 'cv';
const DEFAULT_VERSION = '2022-08-31';

/** Digital humans: the avatar training and its videos. */
const VISUAL_SERVES: EngineDeclaration = { [DIGITAL_HUMAN_CREATE]: {}, [DIGITAL_HUMAN_GENERATIONS]: {} };

/** Upstream reference saved for a resumed run: the query needs the task's req_key too. */
type VisualTaskRef = { req_key: string; task_id: string };

/**
 * The access key pair: from the variables named by options.access_key_id_env and
 * options.secret_access_key_env, or from the api_key_env variable holding `ACCESS_KEY_ID:SECRET`.
 * Undefined (tasks are refused) when the variables are empty; never logged.
 */
function credentialsOf(ctx: AdapterContext): VolcCredentials | undefined {
  const idEnv = stringOption(ctx, 'access_key_id_env');
  const secretEnv = stringOption(ctx, 'secret_access_key_env');
  if (idEnv !== undefined || secretEnv !== undefined) {
    if (idEnv === undefined || secretEnv === undefined) {
      throw new SettingsError(`GENGATE_CONFIG providers.${ctx.provider}.options: access_key_id_env and secret_access_key_env go together`);
    }
    const accessKeyId = process.env[idEnv];
    const secretAccessKey = process.env[secretEnv];
    if (!accessKeyId || !secretAccessKey) {
      ctx.logger.warn({ provider: ctx.provider, env: [idEnv, secretEnv] }, 'the access key variables of a provider are not set');
      return undefined;
    }
    return { accessKeyId, secretAccessKey };
  }
  if (!ctx.apiKey) return undefined;
  const colon = ctx.apiKey.indexOf(':');
  if (colon <= 0 || colon === ctx.apiKey.length - 1) {
    ctx.logger.warn({ provider: ctx.provider, env: ctx.settings.api_key_env }, 'the key variable of a provider must hold ACCESS_KEY_ID:SECRET_ACCESS_KEY');
    return undefined;
  }
  return { accessKeyId: ctx.apiKey.slice(0, colon), secretAccessKey: ctx.apiKey.slice(colon + 1) };
}

/**
 * Volcengine's visual API for digital humans (signed requests, signature V4): CVSubmitTask and
 * CVGetResult with a req_key per product. digital-human.create trains a clone avatar on the source
 * video (its resource_id is kept with the gateway's resource); digital-human.generations lip-syncs
 * a request video_url (Lite or Basic by the model), or has the resource's avatar speak the audio.
 * Settings: options.region, service, version, callback_url and the credentials (see credentialsOf).
 * External API: not cancellable.
 */
export const volcHumanAdapter: AdapterFactory = (ctx) => {
  const scope = { region: stringOption(ctx, 'region') ?? DEFAULT_REGION, service: stringOption(ctx, 'service') ?? DEFAULT_SERVICE };
  const version = stringOption(ctx, 'version') ?? DEFAULT_VERSION;
  const callbackUrl = stringOption(ctx, 'callback_url');
  const credentials = credentialsOf(ctx);
  // No default headers: every API call carries its own signature, and downloads none.
  const client = new UpstreamClient({ ...ctx.client, baseURL: ctx.baseURL ?? DEFAULT_BASE_URL, fetch: ctx.fetch });

  async function call(action: 'CVSubmitTask' | 'CVGetResult', body: Record<string, unknown>, signal: AbortSignal): Promise<unknown> {
    const url = client.urlOf('/', { Action: action, Version: version });
    const text = JSON.stringify(body);
    const headers = signRequest({ method: 'POST', url, body: text, contentType: 'application/json' }, credentials!, scope);
    // A query changes nothing upstream, so it may be sent again after a timeout; a submit may not.
    const res = await client.request({ method: 'POST', path: url.toString(), headers, body: text, signal, idempotent: action === 'CVGetResult' });
    return replyJson(res, ctx.provider, action);
  }

  /** The source video of a create, checked to be a video before anything is paid for. */
  async function sourceVideo(job: GenerationJob, run: RunContext) {
    const source = await run.readInput(inputOf(job, DIGITAL_HUMAN_CREATE).video_id);
    return { source, video: await readVideoInput(source.data, 'video_id', run.signal) };
  }

  async function submitBody(job: GenerationJob, run: RunContext): Promise<Record<string, unknown>> {
    if (job.endpoint === DIGITAL_HUMAN_CREATE) {
      const create = inputOf(job, DIGITAL_HUMAN_CREATE);
      await sourceVideo(job, run);
      return trainingBody(create, await fetchableUrl(create.video_id, run, 'source.mp4'), callbackUrl);
    }
    const input = inputOf(job, DIGITAL_HUMAN_GENERATIONS);
    const plan = generationPlan(input);
    const urls = {
      audio: await fetchableUrl(input.audio_url, run, 'audio.mp3'),
      ...(plan.task === 'lip_sync' ? { video: await fetchableUrl(plan.videoRef, run, 'video.mp4') } : {}),
    };
    const { body, dropped } = generationBody(plan, job.model, input, urls, callbackUrl);
    for (const field of dropped) run.warn(`${field} was not sent: the ${String(body.req_key)} task does not take it`);
    return body;
  }

  return upstreamTaskEngine<VisualTaskRef>({
    check(job) {
      if (!credentials) throw new TaskRejectedError(`provider ${ctx.provider} has no access key (see the provider's credential settings)`);
    },
    async submit(job, run) {
      const body = await submitBody(job, run);
      return { req_key: String(body.req_key), task_id: submittedTaskId(await call('CVSubmitTask', body, run.signal)) };
    },
    async poll(ref, job, run) {
      const state = resultState(await call('CVGetResult', { req_key: ref.req_key, task_id: ref.task_id }, run.signal));
      if (state.state !== 'succeeded') return state;
      if (job.endpoint === DIGITAL_HUMAN_CREATE) {
        const resourceId = trainedResourceId(state.respData);
        const { source, video } = await sourceVideo(job, run);
        return { state: 'succeeded', output: createOutput(source, video, resourceId, job.taskId) };
      }
      const file = await downloadFile(client, resultVideoUrl(state), run.signal);
      const video = await readVideoInput(file.data, 'the upstream video', run.signal);
      return { state: 'succeeded', output: generationOutput(file.data, video, ref.req_key, ref.task_id) };
    },
  }, { cancellable: false, pollIntervalMs: ctx.pollIntervalMs, maxWaitMs: ctx.maxWaitMs, serves: VISUAL_SERVES });
};
