import { checkApiKey, downloadFile, numberOption, replyJson, stringOption, type AdapterFactory } from '../adapter-support.ts';
import { TaskFailedError, inputOf, type EngineDeclaration, type GenerationEngine, type GenerationJob, type GenerationOutput, type RunContext } from '../spec.ts';
import { UpstreamClient } from '../upstream-client.ts';
import { upstreamTaskEngine } from '../upstream-task-engine.ts';
import {
  DEFAULT_SYNC_TEXT_LIMIT,
  asyncAudio,
  asyncBody,
  asyncState,
  asyncSubmitted,
  checkBaseResp,
  formatOf,
  runsAsync,
  speechOutput,
  syncAudio,
  syncBody,
  syncInfo,
  uploadedFileId,
  type MinimaxAsyncRef,
  type UpstreamId,
} from './mapping.ts';

const DEFAULT_BASE_URL = 'https://api.minimax.io';

const speechOf = (job: GenerationJob) => inputOf(job, 'speech.generations');

/** Speech, every field of the request. */
const MINIMAX_SERVES: EngineDeclaration = { 'speech.generations': {} };

/**
 * MiniMax T2A v2 (Bearer key; options.group_id adds the GroupId query parameter older accounts
 * need): speech.generations → POST /v1/t2a_v2, or for long text (over options.sync_text_limit
 * characters, default 10,000) and uploaded text files POST /v1/t2a_async_v2, polled at
 * /v1/query/t2a_async_query_v2 and fetched from /v1/files/retrieve_content. Not cancellable.
 */
export const minimaxAdapter: AdapterFactory = (ctx) => {
  const baseURL = ctx.baseURL ?? DEFAULT_BASE_URL;
  const groupId = stringOption(ctx, 'group_id');
  const syncTextLimit = numberOption(ctx, 'sync_text_limit') ?? DEFAULT_SYNC_TEXT_LIMIT;
  const api = new UpstreamClient({ ...ctx.client, baseURL, fetch: ctx.fetch, headers: { authorization: `Bearer ${ctx.apiKey ?? ''}` } });
  const storage = new UpstreamClient({ ...ctx.client, baseURL, fetch: ctx.fetch });
  const query = (params: Record<string, string> = {}) => ({ ...(groupId ? { GroupId: groupId } : {}), ...params });

  function check(job: GenerationJob): void {
    checkApiKey(ctx);
  }

  /** One synchronous call; nothing to resume, so a resumed run calls again. */
  async function synthesize(job: GenerationJob, run: RunContext): Promise<GenerationOutput> {
    const res = await api.request({ path: '/v1/t2a_v2', query: query(), json: syncBody(speechOf(job), job.model.defaultRealModelName), signal: run.signal });
    const reply = replyJson(res, ctx.provider, 'the speech request');
    const audio = syncAudio(reply);
    const data = 'audio' in audio ? audio.audio : (await downloadFile(storage, audio.url, run.signal)).data;
    const info = syncInfo(reply);
    return speechOutput(data, formatOf(speechOf(job)), info.characters, info.audioLengthMs !== undefined ? { audio_length_ms: info.audioLengthMs } : {});
  }

  /** The request's text file (a gateway reference) uploaded to MiniMax for the long-text API. */
  async function uploadText(ref: string, run: RunContext): Promise<UpstreamId> {
    const file = await run.readInput(ref);
    try {
      new TextDecoder('utf-8', { fatal: true }).decode(file.data);
    } catch {
      throw new TaskFailedError('text_file_id is not a UTF-8 text file', `${file.fileName} (${file.mimeType})`);
    }
    const form = new FormData();
    form.set('purpose', 't2a_async_input');
    form.set('file', new Blob([new Uint8Array(file.data)], { type: 'text/plain' }), /\.txt$/i.test(file.fileName) ? file.fileName : 'text.txt');
    const res = await api.request({ path: '/v1/files/upload', query: query(), body: form, signal: run.signal });
    return uploadedFileId(replyJson(res, ctx.provider, 'the text file upload'));
  }

  const longText = upstreamTaskEngine<MinimaxAsyncRef>({
    async submit(job, run) {
      const input = speechOf(job);
      const textFileId = input.text_file_id !== undefined ? await uploadText(input.text_file_id, run) : undefined;
      const res = await api.request({ path: '/v1/t2a_async_v2', query: query(), json: asyncBody(input, job.model.defaultRealModelName, textFileId), signal: run.signal });
      return asyncSubmitted(replyJson(res, ctx.provider, 'the long-text speech request'));
    },
    async poll(ref, job, run) {
      const res = await api.request({ path: '/v1/query/t2a_async_query_v2', query: query({ task_id: ref.task_id }), signal: run.signal });
      const state = asyncState(replyJson(res, ctx.provider, 'the speech task query'));
      if (state.state !== 'succeeded') return state;
      const file = await api.request({ path: '/v1/files/retrieve_content', query: query({ file_id: state.fileId }), signal: run.signal });
      // The file comes as bytes; a JSON body is an error in the usual envelope.
      if ((file.headers.get('content-type') ?? '').includes('json')) {
        checkBaseResp(replyJson(file, ctx.provider, 'the result file download'), 'the result file download');
        throw new TaskFailedError('minimax answered the result file download with JSON instead of audio', file.body.toString('utf8').slice(0, 2000));
      }
      return { state: 'succeeded', output: speechOutput(asyncAudio(file.body, formatOf(speechOf(job))), formatOf(speechOf(job)), ref.usage_characters, { upstream_task_id: ref.task_id }) };
    },
  }, { cancellable: false, pollIntervalMs: ctx.pollIntervalMs, maxWaitMs: ctx.maxWaitMs });

  const engine: GenerationEngine = {
    cancellable: false,
    serves: MINIMAX_SERVES,
    check,
    run: (job, run) => (runsAsync(speechOf(job), syncTextLimit) ? longText.run(job, run) : synthesize(job, run)),
  };
  return engine;
};
