import { randomUUID } from 'node:crypto';
import path from 'node:path';
import type { AdapterFactory } from '../adapter-support.ts';
import { TaskCancelledError, TaskFailedError, TaskRejectedError, type GeneratedFile, type GenerationJob, type GenerationOutput, type RunContext } from '../spec.ts';
import { UpstreamClient, UpstreamError } from '../upstream-client.ts';
import { loadSharp } from '../load-sharp.ts';
import type { NodeStatus } from '../spec.ts';
import { readReply } from '../upstream-reply.ts';
import { ComfySocket } from './comfyui-socket.ts';
import {
  bindGraph, executionErrorMessage, historyOutcome, outputKind, percentOf, refsOf, refusalText, requestValues, runningNodeStatus, uploadFields,
  type ExecutionError, type OutputFileRef,
} from './mapping.ts';
import { ComfyQueue, ComfyQueued, ComfyUploaded } from './reply-schemas.ts';
import { WorkflowFolder, type Workflow } from './workflow-catalog.ts';

const DEFAULT_BASE_URL = 'http://127.0.0.1:8188';
/** The workflows folder when options.workflows_dir is not set, relative to the working directory. */
const DEFAULT_WORKFLOWS_DIR = 'workflows';
/** Saved once the prompt is queued: a resumed run watches it instead of queueing it again. */
const SAVED_KEY = 'comfyui';
/** With live WebSocket messages, /history is still read this often in case one was missed. */
const HISTORY_CHECK_WITH_SOCKET_MS = 10_000;

interface SavedPrompt {
  prompt_id: string;
}

/**
 * ComfyUI as the workflow engine (adapter `comfyui`): a request naming a workflow of the
 * workflows folder is bound into its graph, its images uploaded, and the prompt queued with
 * this instance's client id; progress and node status come from the WebSocket (or, without
 * it, from polling /history), outputs from /view. Runs can be cancelled (interrupt or dequeue).
 *
 * Options (GENGATE_CONFIG providers.<code>.options): `workflows_dir` (default ./workflows).
 */
export const comfyuiAdapter: AdapterFactory = (ctx) => {
  const baseURL = ctx.baseURL ?? DEFAULT_BASE_URL;
  const auth: Record<string, string> = ctx.apiKey ? { authorization: `Bearer ${ctx.apiKey}` } : {};
  const client = new UpstreamClient({ ...ctx.client, baseURL, fetch: ctx.fetch, headers: auth });
  const workflowsDir = path.resolve(typeof ctx.settings.options?.workflows_dir === 'string' ? ctx.settings.options.workflows_dir : DEFAULT_WORKFLOWS_DIR);
  const workflows = new WorkflowFolder(workflowsDir, ctx.provider, ctx.logger);
  ctx.logger.info({ dir: workflowsDir, workflows: workflows.current().names }, 'ComfyUI workflows loaded');
  // One client id per gateway instance: ComfyUI sends a prompt's messages to the socket of the id it was queued with.
  const clientId = `gengate-${randomUUID()}`;
  const wsURL = client.urlOf('/ws', { clientId });
  wsURL.protocol = wsURL.protocol === 'https:' ? 'wss:' : 'ws:';
  const socket = new ComfySocket({ url: wsURL.href, headers: auth, connectTimeoutMs: Math.min(ctx.client.timeoutMs ?? 10_000, 10_000), logger: ctx.logger });

  function workflowOf(job: GenerationJob): Workflow {
    const workflow = workflows.current().get(job.model.alias);
    if (!workflow) throw new TaskRejectedError(`workflow ${job.model.alias} is not in the workflows folder of provider ${ctx.provider}`);
    return workflow;
  }

  /** Uploads the images of `upload` bindings; the request values then hold ComfyUI's names for them. */
  async function uploadInputs(job: GenerationJob, workflow: Workflow, values: Record<string, unknown>, rc: RunContext): Promise<Record<string, unknown>> {
    const uploaded = { ...values };
    for (const field of uploadFields(workflow)) {
      const refs = refsOf(values[field]);
      if (refs.length === 0) continue;
      const names: string[] = [];
      for (const [i, ref] of refs.entries()) {
        const input = await rc.readInput(ref);
        const extension = path.extname(input.fileName) || `.${input.mimeType.split('/')[1] ?? 'png'}`;
        const form = new FormData();
        form.append('image', new Blob([new Uint8Array(input.data)], { type: input.mimeType }), `gengate-${job.taskId}-${field}-${i}${extension}`);
        form.append('type', 'input');
        form.append('overwrite', 'true');
        const res = await client.request({ method: 'POST', path: '/upload/image', body: form, signal: rc.signal });
        const reply = readReply(ComfyUploaded, res.json(), 'ComfyUI');
        names.push(reply.subfolder ? `${reply.subfolder}/${reply.name}` : reply.name);
      }
      uploaded[field] = Array.isArray(values[field]) ? names : names[0];
    }
    return uploaded;
  }

  async function submit(job: GenerationJob, workflow: Workflow, rc: RunContext): Promise<string> {
    const values = await uploadInputs(job, workflow, requestValues(job.input), rc);
    const { prompt, warnings } = bindGraph(workflow, values);
    for (const warning of warnings) rc.warn(warning);
    let res;
    try {
      res = await client.request({ method: 'POST', path: '/prompt', json: { prompt, client_id: clientId }, signal: rc.signal });
    } catch (err) {
      if (err instanceof UpstreamError && err.status === 400) throw new TaskFailedError(`ComfyUI refused workflow ${workflow.name}: ${refusalText(err.originalMessage ?? '')}`, err.originalMessage);
      throw err;
    }
    return readReply(ComfyQueued, res.json(), 'ComfyUI').prompt_id;
  }

  /** Where ComfyUI has the prompt: running, waiting, or neither (finished or unknown). */
  async function queuePlace(promptId: string): Promise<'running' | 'pending' | undefined> {
    const queue = readReply(ComfyQueue, (await client.request({ path: '/queue' })).json(), 'ComfyUI');
    const has = (items: unknown[][] | undefined) => (items ?? []).some((item) => item[1] === promptId);
    return has(queue.queue_running) ? 'running' : has(queue.queue_pending) ? 'pending' : undefined;
  }

  /** Stops the prompt: interrupts it when it runs, takes it off the queue when it waits. */
  async function stop(promptId: string): Promise<void> {
    const place = await queuePlace(promptId);
    if (place === 'running') await client.request({ method: 'POST', path: '/interrupt', json: { prompt_id: promptId } });
    else if (place === 'pending') await client.request({ method: 'POST', path: '/queue', json: { delete: [promptId] } });
  }

  async function history(promptId: string, workflow: Workflow, rc: RunContext) {
    return historyOutcome((await client.request({ path: `/history/${encodeURIComponent(promptId)}`, signal: rc.signal })).json(), promptId, workflow);
  }

  async function fetchOutputs(files: OutputFileRef[], workflow: Workflow, rc: RunContext): Promise<GeneratedFile[]> {
    const out: GeneratedFile[] = [];
    for (const file of files) {
      const res = await client.request({ path: '/view', query: { filename: file.filename, subfolder: file.subfolder, type: file.type }, signal: rc.signal });
      const kind = outputKind(file.filename, workflow.output_type);
      const generated: GeneratedFile = { type: kind.type, data: res.body, fileName: file.filename, mimeType: kind.mimeType };
      if (kind.type === 'image') {
        const sharp = await loadSharp();
        const meta = await sharp(res.body).metadata().catch(() => undefined);
        if (meta?.width && meta.height) generated.mediaSize = { type: 'image', width: meta.width, height: meta.height, status: 1 };
      }
      out.push(generated);
    }
    return out;
  }

  /** Waits for the prompt's end, reporting progress and node status; answers its outputs. */
  async function watch(promptId: string, workflow: Workflow, live: boolean, rc: RunContext): Promise<GenerationOutput> {
    const deadline = Date.now() + ctx.maxWaitMs;
    const nodeCount = Object.keys(workflow.graph).length;
    let lastHistoryCheck = 0;
    let reported = { percent: 0, node: undefined as string | undefined };
    const failed = async (error: ExecutionError): Promise<never> => {
      const status: NodeStatus = { executeId: promptId, customWorkflowId: workflow.name, status: 'failed', message: error.message, ...(error.nodeId ? { nodeId: error.nodeId } : {}) };
      await rc.progress(reported.percent, 'failed', status);
      throw new TaskFailedError(executionErrorMessage(error), error.message);
    };
    const interrupted = (nodeId?: string): never => {
      throw new TaskFailedError(`the workflow was interrupted in ComfyUI${nodeId ? ` at node ${nodeId}` : ''}`);
    };
    for (;;) {
      rc.signal.throwIfAborted();
      const withSocket = live && socket.connected;
      const mark = socket.mark(promptId);
      const seen = socket.progress(promptId);
      if (seen?.error) await failed(seen.error);
      if (seen?.interrupted) interrupted(seen.interrupted.nodeId);
      const now = Date.now();
      if (!withSocket || seen?.finished || now - lastHistoryCheck >= Math.max(ctx.pollIntervalMs, HISTORY_CHECK_WITH_SOCKET_MS)) {
        lastHistoryCheck = now;
        const outcome = await history(promptId, workflow, rc);
        if (outcome.state === 'failed') await failed(outcome.error);
        if (outcome.state === 'interrupted') interrupted(outcome.nodeId);
        if (outcome.state === 'success') {
          const files = await fetchOutputs(outcome.files, workflow, rc);
          const last = outcome.files.at(-1)?.node;
          return { files, nodeStatus: { executeId: promptId, customWorkflowId: workflow.name, status: 'success', message: 'success', ...(last ? { nodeId: last } : {}) } };
        }
      }
      if (seen) {
        const percent = percentOf(seen, nodeCount);
        if (percent > reported.percent || seen.running !== reported.node) {
          const status = runningNodeStatus(promptId, workflow, seen);
          reported = { percent: Math.max(percent, reported.percent), node: seen.running };
          await rc.progress(reported.percent, status?.message, status);
        }
      }
      // After the progress: the status of the node that made the preview is reported first.
      if (seen?.preview) {
        const { image, mimeType } = seen.preview;
        delete seen.preview;
        await rc.preview(image, mimeType);
      }
      if (Date.now() > deadline) {
        await stop(promptId).catch((err: unknown) => ctx.logger.warn({ err, promptId }, 'stopping a timed-out ComfyUI prompt failed'));
        throw new TaskFailedError(`the workflow did not finish within ${ctx.maxWaitMs / 1000} s`);
      }
      const nextCheck = withSocket ? Math.max(ctx.pollIntervalMs, HISTORY_CHECK_WITH_SOCKET_MS) : ctx.pollIntervalMs;
      await socket.waitForChange(promptId, mark, Math.min(nextCheck, deadline - Date.now() + 1), rc.signal);
    }
  }

  return {
    cancellable: true,
    findModel: (name) => workflows.current().model(name),
    listModels: () => workflows.current().models(),
    check(job) {
      workflowOf(job);
    },
    async run(job, rc) {
      const workflow = workflowOf(job);
      // Open before queueing, so none of the prompt's messages are missed.
      const connected = await socket.acquire();
      let promptId = (job.saved?.[SAVED_KEY] as SavedPrompt | undefined)?.prompt_id;
      const resumed = promptId !== undefined;
      try {
        if (promptId === undefined) {
          promptId = await submit(job, workflow, rc);
          await rc.remember({ [SAVED_KEY]: { prompt_id: promptId } satisfies SavedPrompt });
        } else if (!(await queuePlace(promptId)) && (await history(promptId, workflow, rc)).state === 'pending') {
          // Neither queued nor in the history: ComfyUI restarted and lost it.
          throw new TaskFailedError(`ComfyUI no longer knows prompt ${promptId} (it was restarted?); the task is not run again`);
        }
        // A resumed prompt was queued by another instance's client id: its messages go there, so it is polled.
        return await watch(promptId, workflow, connected && !resumed, rc);
      } catch (err) {
        if (promptId !== undefined && rc.signal.reason instanceof TaskCancelledError) {
          await stop(promptId).catch((stopErr: unknown) => ctx.logger.warn({ err: stopErr, promptId }, 'stopping a cancelled ComfyUI prompt failed'));
        }
        throw err;
      } finally {
        if (promptId !== undefined) socket.forget(promptId);
        socket.release();
      }
    },
  };
};
