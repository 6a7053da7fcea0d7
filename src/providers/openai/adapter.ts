import { imageFile, type AdapterFactory } from '../adapter-support.ts';
import { TaskFailedError, TaskRejectedError, type GenerationJob, type GenerationOutput, type InputFile } from '../spec.ts';
import { UpstreamClient } from '../upstream-client.ts';
import { IMAGE_SERVES, editForm, imageRequestFields, isImageJob, parseImagesReply, upstreamErrorText, type ImageJob } from './mapping.ts';

const DEFAULT_BASE_URL = 'https://api.openai.com/v1';

/** Saved before the request goes out: a run resumed after a restart must not send (and pay for) it twice. */
const SAVED_KEY = 'openai_images';

/**
 * OpenAI-compatible images (adapter `openai`): one synchronous request per task to
 * /images/generations (JSON) or /images/edits (multipart); the images of the reply, inline or
 * downloaded, become the task's files. An external API, so its tasks cannot be cancelled.
 */
export const openaiImagesAdapter: AdapterFactory = (ctx) => {
  const baseURL = ctx.baseURL ?? DEFAULT_BASE_URL;
  // The upstream's own words as original_error_message, not its JSON envelope.
  const api = new UpstreamClient({ ...ctx.client, baseURL, fetch: ctx.fetch, headers: ctx.apiKey ? { authorization: `Bearer ${ctx.apiKey}` } : {}, errorMessage: upstreamErrorText });
  // Result URLs point at storage hosts: fetched without the API key.
  const downloads = new UpstreamClient({ ...ctx.client, baseURL, fetch: ctx.fetch });

  function imageJob(job: GenerationJob): ImageJob {
    if (!isImageJob(job)) throw new TaskRejectedError(`provider ${ctx.provider} (adapter openai) does not run ${job.endpoint} tasks`);
    return job;
  }

  return {
    cancellable: false,
    serves: IMAGE_SERVES,
    async run(generation, rc): Promise<GenerationOutput> {
      const job = imageJob(generation);
      const { endpoint } = job;
      if (job.saved?.[SAVED_KEY]) throw new TaskFailedError('the request to the image provider was interrupted by a restart; it is not sent again because it may already have been billed');
      const { fields, warnings } = imageRequestFields(job);
      for (const warning of warnings) rc.warn(warning);

      let body: { json: unknown } | { body: FormData };
      if (job.endpoint === 'images.edits') {
        const images: InputFile[] = [];
        for (const ref of job.input.image) images.push(await rc.readInput(ref));
        const mask = job.input.mask !== undefined ? await rc.readInput(job.input.mask) : undefined;
        body = { body: await editForm(fields, images, mask) };
      } else {
        body = { json: fields };
      }
      await rc.remember({ [SAVED_KEY]: { sent_at: Date.now() } });
      const res = await api.request({ path: endpoint === 'images.edits' ? '/images/edits' : '/images/generations', ...body, signal: rc.signal });
      let parsed: unknown;
      try {
        parsed = res.json();
      } catch {
        throw new TaskFailedError('OpenAI images reply is not JSON', res.body.toString('utf8').slice(0, 2000));
      }
      const reply = parseImagesReply(parsed);
      const files = [];
      for (const [i, image] of reply.images.entries()) {
        const data = 'b64' in image ? Buffer.from(image.b64, 'base64') : (await downloads.request({ path: image.url, signal: rc.signal })).body;
        files.push(await imageFile(data, i, 'OpenAI images reply'));
      }
      return {
        files,
        ...(reply.usage ? { usage: reply.usage } : {}),
        ...(reply.revisedPrompts.length > 0 ? { extra: { revised_prompts: reply.revisedPrompts } } : {}),
      };
    },
  };
};
