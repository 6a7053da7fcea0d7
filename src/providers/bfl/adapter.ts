import { checkApiKey, downloadFile, imageFile, replyJson, type AdapterFactory } from '../adapter-support.ts';
import { inputOf, type GenerationJob, type RunContext } from '../spec.ts';
import { UpstreamClient } from '../upstream-client.ts';
import { upstreamTaskEngine } from '../upstream-task-engine.ts';
import { BFL_SERVES, checkKontextRequest, errorText, kontextBody, resultState, submittedRequest, type SubmittedRequest } from './mapping.ts';

const DEFAULT_BASE_URL = 'https://api.bfl.ai';

/** The request's typed input, generation or edit (the declaration lets no other endpoint through). */
function inputOfJob(job: GenerationJob) {
  return job.endpoint === 'images.edits' ? inputOf(job, 'images.edits') : inputOf(job, 'images.generations');
}

/** What Kontext takes for an image reference: an http(s) URL as it is, anything else as raw base64. */
async function imageValue(ref: string, run: RunContext): Promise<string> {
  if (/^https?:\/\//i.test(ref.trim())) return ref.trim();
  return (await run.readInput(ref)).data.toString('base64');
}

/**
 * Black Forest Labs (header x-key): FLUX Kontext generation and editing at POST /v1/<model>
 * (the catalog's defaultRealModelName, e.g. flux-kontext-pro); the polling_url the submit
 * answers is polled (never rebuilt: the global host routes across clusters) and the sample
 * downloaded at once (it expires in minutes). External API: not cancellable.
 */
export const bflAdapter: AdapterFactory = (ctx) => {
  const baseURL = ctx.baseURL ?? DEFAULT_BASE_URL;
  const api = new UpstreamClient({ ...ctx.client, baseURL, fetch: ctx.fetch, headers: { 'x-key': ctx.apiKey ?? '' }, errorMessage: errorText });
  // Samples are signed delivery URLs: fetched without the key.
  const delivery = new UpstreamClient({ ...ctx.client, baseURL, fetch: ctx.fetch });

  return upstreamTaskEngine<SubmittedRequest & Record<string, unknown>>({
    check(job) {
      checkApiKey(ctx);
      checkKontextRequest(inputOfJob(job));
    },
    async submit(job, run) {
      const input = inputOfJob(job);
      const images: string[] = [];
      if (job.endpoint === 'images.edits') for (const ref of inputOf(job, 'images.edits').image) images.push(await imageValue(ref, run));
      const { body, warnings } = kontextBody(input, images);
      for (const warning of warnings) run.warn(warning);
      const res = await api.request({ path: `/v1/${encodeURIComponent(job.model.defaultRealModelName)}`, json: body, signal: run.signal });
      return { ...submittedRequest(replyJson(res, ctx.provider, 'the image request')) };
    },
    async poll(ref, _job, run) {
      const state = resultState(replyJson(await api.request({ path: ref.polling_url, signal: run.signal }), ctx.provider, 'the result query'));
      if (state.state !== 'succeeded') return state;
      const sample = await downloadFile(delivery, state.sampleUrl, run.signal);
      return {
        state: 'succeeded',
        output: {
          files: [await imageFile(sample.data, 0, 'bfl sample')],
          extra: { upstream_task_id: ref.id, ...(state.seed !== undefined ? { seed: state.seed } : {}), ...(ref.credits !== undefined ? { bfl_credits: ref.credits } : {}) },
        },
      };
    },
  }, { cancellable: false, pollIntervalMs: ctx.pollIntervalMs, maxWaitMs: ctx.maxWaitMs, serves: BFL_SERVES });
};
