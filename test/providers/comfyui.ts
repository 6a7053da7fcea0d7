import { readTaskEvents } from '../support/sse.ts';
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import sharp from 'sharp';
import { FakeComfyUI } from '../fakes/comfyui-upstream.ts';
import { providerEnv, useProviderGateway, withGateway, withRestartingGateway, type GatewayUser, type Json } from '../support/provider-harness.ts';
import { bindGraph, historyOutcome, refusalText, requestValues } from '../../src/providers/comfyui/mapping.ts';
import { loadWorkflows, WorkflowError, type Workflow } from '../../src/providers/comfyui/workflow-catalog.ts';
import type { TaskStatusEvent } from '../../src/storage/event-bus.ts';

const EXAMPLE = path.join(import.meta.dirname, '..', '..', 'workflows', 'examples', 'sd15-text-to-image.json');
const TEXT_TO_IMAGE = 'sd15-text-to-image';

/** An image-to-image workflow: the request's first image is uploaded and loaded by node 10. */
const IMAGE_EDIT = {
  capabilities: ['image_edit'],
  graph: {
    '3': { class_type: 'KSampler', inputs: { seed: 1, steps: 4, cfg: 7, sampler_name: 'euler', scheduler: 'normal', denoise: 0.6, model: ['4', 0], positive: ['6', 0], negative: ['7', 0], latent_image: ['11', 0] } },
    '4': { class_type: 'CheckpointLoaderSimple', inputs: { ckpt_name: 'v1-5-pruned-emaonly.safetensors' } },
    '6': { class_type: 'CLIPTextEncode', inputs: { text: '', clip: ['4', 1] } },
    '7': { class_type: 'CLIPTextEncode', inputs: { text: 'blurry', clip: ['4', 1] } },
    '8': { class_type: 'VAEDecode', inputs: { samples: ['3', 0], vae: ['4', 2] } },
    '9': { class_type: 'SaveImage', inputs: { filename_prefix: 'edit', images: ['8', 0] } },
    '10': { class_type: 'LoadImage', inputs: { image: 'example.png' } },
    '11': { class_type: 'VAEEncode', inputs: { pixels: ['10', 0], vae: ['4', 2] } },
  },
  bindings: { prompt: [{ node: '6', input: 'text' }], image: [{ node: '10', input: 'image', upload: true }], seed: [{ node: '3', input: 'seed' }] },
  outputs: ['9'],
};

/** Valid for the gateway, refused by ComfyUI: its checkpoint is not installed. */
const BROKEN_CHECKPOINT = {
  ...JSON.parse(fs.readFileSync(EXAMPLE, 'utf8')),
  description: 'asks for a checkpoint ComfyUI does not have',
};
BROKEN_CHECKPOINT.graph['4'].inputs.ckpt_name = 'missing.safetensors';

function workflowsDir(): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'gengate-workflows-'));
  fs.copyFileSync(EXAMPLE, path.join(dir, `${TEXT_TO_IMAGE}.json`));
  fs.writeFileSync(path.join(dir, 'sd15-image-edit.json'), JSON.stringify(IMAGE_EDIT));
  fs.writeFileSync(path.join(dir, 'broken-checkpoint.json'), JSON.stringify(BROKEN_CHECKPOINT));
  return dir;
}

const gatewayEnv = (fake: FakeComfyUI, dir: string, settings: Record<string, unknown> = {}) => providerEnv('comfyui', fake.url, { options: { workflows_dir: dir }, ...settings });

async function submitAsync(user: GatewayUser, json: Json): Promise<string> {
  return (await user.postOk('/v1/images/generations', json, { 'x-async': 'true' })).task_id;
}

function loadExample(): Workflow {
  return { ...(JSON.parse(fs.readFileSync(EXAMPLE, 'utf8')) as Omit<Workflow, 'name'>), name: TEXT_TO_IMAGE };
}

describe('ComfyUI mapping', () => {
  it('binds request fields into the graph: size to width and height, list items by index, random seeds when missing', () => {
    const workflow = loadExample();
    const { prompt, warnings } = bindGraph(workflow, requestValues({ prompt: 'a fox', size: '640x384', n: 2, style: 'ink' }), () => 0.5);
    assert.equal(prompt['6']!.inputs.text, 'a fox');
    assert.deepEqual([prompt['5']!.inputs.width, prompt['5']!.inputs.height, prompt['5']!.inputs.batch_size], [640, 384, 2]);
    assert.equal(prompt['3']!.inputs.seed, 2 ** 31, 'no seed in the request: a random one');
    assert.equal(prompt['3']!.inputs.steps, 20, 'unbound: the graph keeps its value');
    assert.deepEqual(warnings, [`style dropped: workflow ${TEXT_TO_IMAGE} has no binding for it`]);
    assert.equal(workflow.graph['6']!.inputs.text, 'a photograph of a lighthouse', 'the workflow itself is unchanged');

    const edit: Workflow = { ...(IMAGE_EDIT as unknown as Workflow), name: 'edit', bindings: { image: [{ node: '10', input: 'image' }, { node: '6', input: 'text', index: 1 }] } };
    const bound = bindGraph(edit, { image: ['a.png', 'b.png'] }).prompt;
    assert.equal(bound['10']!.inputs.image, 'a.png');
    assert.equal(bound['6']!.inputs.text, 'b.png');
  });

  it('reads history entries: pending, outputs of the output nodes, node errors and interrupts', () => {
    const workflow = loadExample();
    assert.deepEqual(historyOutcome({}, 'p1', workflow), { state: 'pending' });
    const outputs = { '9': { images: [{ filename: 'a.png', subfolder: 's', type: 'output' }] }, '12': { images: [{ filename: 'b.png', subfolder: '', type: 'temp' }] } };
    assert.deepEqual(historyOutcome({ p1: { outputs, status: { status_str: 'success', completed: true, messages: [] } } }, 'p1', workflow), {
      state: 'success',
      files: [{ node: '9', filename: 'a.png', subfolder: 's', type: 'output' }],
    });
    const error = { status: { status_str: 'error', completed: false, messages: [['execution_start', {}], ['execution_error', { node_id: '3', node_type: 'KSampler', exception_message: 'boom\n', exception_type: 'RuntimeError' }]] } };
    assert.deepEqual(historyOutcome({ p1: error }, 'p1', workflow), { state: 'failed', error: { nodeId: '3', nodeType: 'KSampler', exceptionType: 'RuntimeError', message: 'boom' } });
    const stopped = { status: { status_str: 'error', completed: false, messages: [['execution_interrupted', { node_id: '3' }]] } };
    assert.deepEqual(historyOutcome({ p1: stopped }, 'p1', workflow), { state: 'interrupted', nodeId: '3' });
  });

  it('words a /prompt refusal from its error and node errors', () => {
    const body = JSON.stringify({
      error: { type: 'prompt_outputs_failed_validation', message: 'Prompt outputs failed validation', details: '', extra_info: {} },
      node_errors: { '5': { errors: [{ type: 'value_smaller_than_min', message: 'Value 8 smaller than min of 16', details: 'width' }], dependent_outputs: ['9'], class_type: 'EmptyLatentImage' } },
    });
    assert.equal(refusalText(body), 'Prompt outputs failed validation; node 5 (EmptyLatentImage): Value 8 smaller than min of 16: width');
  });

  it('refuses a workflows folder with a bad file, naming the file and the problem', () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'gengate-workflows-'));
    try {
      fs.writeFileSync(path.join(dir, 'bad.json'), JSON.stringify({ ...IMAGE_EDIT, bindings: { prompt: [{ node: '42', input: 'text' }] }, outputs: ['77'] }));
      assert.throws(() => loadWorkflows(dir), (err: unknown) => {
        assert.ok(err instanceof WorkflowError);
        assert.match(err.message, /bad\.json: \.bindings\.prompt\[0\]: node 42 is not in the graph/);
        assert.match(err.message, /bad\.json: \.outputs: node 77 is not in the graph/);
        return true;
      });
      assert.deepEqual(loadWorkflows(path.join(dir, 'missing')), [], 'a missing folder holds no workflows');
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('ComfyUI adapter', () => {
  let dir: string;
  before(() => {
    dir = workflowsDir();
  });
  const gateway = useProviderGateway({ startFake: FakeComfyUI.start, env: (fake) => gatewayEnv(fake, dir), userId: 'artist' });
  const events: TaskStatusEvent[] = [];
  before(() => {
    gateway.user.srv.server.services.bus.subscribe('task.status', (e) => void events.push(e));
  });

  after(() => {
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('runs a workflow named as the model: bound prompt, live progress and node status, outputs from /view', async () => {
    const { fake, user } = gateway;
    const before = fake.requests.length;
    const res = await user.post('/v1/images/generations', { model: TEXT_TO_IMAGE, prompt: 'a red fox in snow', size: '64x48', n: 2, seed: 42, steps: 3 });
    const body = (await res.json()) as Json;
    assert.equal(res.status, 200, JSON.stringify(body));
    assert.equal(body.status, 'success');

    const [submit, ...more] = fake.requests.slice(before).filter((r) => r.method === 'POST' && r.path === '/prompt');
    assert.equal(more.length, 0);
    const expected = JSON.parse(fs.readFileSync(EXAMPLE, 'utf8')).graph;
    expected['6'].inputs.text = 'a red fox in snow';
    Object.assign(expected['5'].inputs, { width: 64, height: 48, batch_size: 2 });
    Object.assign(expected['3'].inputs, { seed: 42, steps: 3 });
    assert.deepEqual(submit!.json, { prompt: expected, client_id: fake.socketClients.at(-1) });
    assert.match(String(submit!.json!.client_id), /^gengate-/);

    assert.equal(body.data.length, 2);
    const promptId = ((await user.recordWhen(body.task_id, () => true)) as Json).node_status.executeId;
    for (const [i, { url }] of body.data.entries()) {
      const file = Buffer.from(await (await fetch(url)).arrayBuffer());
      const meta = await sharp(file).metadata();
      assert.deepEqual([meta.format, meta.width, meta.height], ['png', 64, 48]);
      const name = body.output_content[i].filename as string;
      assert.ok(file.equals(fake.file('output', name)!), `${name} is the file ComfyUI wrote`);
    }
    const views = fake.requests.slice(before).filter((r) => r.path === '/view');
    assert.deepEqual(views.map((v) => v.query), body.output_content.map((o: Json) => ({ filename: o.filename, subfolder: '', type: 'output' })));

    const record = await user.recordWhen(body.task_id, () => true);
    assert.deepEqual(record.node_status, { executeId: promptId, customWorkflowId: TEXT_TO_IMAGE, status: 'success', message: 'success', nodeId: '9' });
    assert.equal(record.queue_status.progress, 100);
    assert.equal(record.billings[0].platform.code, 'comfyui');
    const live = events.filter((e) => e.taskId === body.task_id && e.status === 'process');
    const sampling = live.find((e) => e.record.node_status?.nodeId === '3');
    assert.ok(sampling, 'node status of the sampler while it ran');
    assert.equal(sampling.record.node_status!.status, 'running');
    assert.equal(sampling.record.node_status!.executeId, promptId);
    assert.match(sampling.record.node_status!.message!, /^KSampler( \d\/3)?$/);
    const progress = live.map((e) => e.record.queue_status.progress);
    assert.ok(progress.some((p) => p > 0 && p < 100), `progress while running: ${progress.join(',')}`);
    assert.deepEqual(progress, [...progress].sort((a, b) => a - b), 'progress never goes down');
  });

  it('uploads the images of an edit and binds the uploaded names', async () => {
    const { fake, user } = gateway;
    const input = await sharp({ create: { width: 40, height: 24, channels: 3, background: '#336699' } }).png().toBuffer();
    const before = fake.requests.length;
    const res = await user.post('/v1/images/edits', { model: 'sd15-image-edit', prompt: 'make it night', image: [`data:image/png;base64,${input.toString('base64')}`], seed: 5 });
    const body = (await res.json()) as Json;
    assert.equal(res.status, 200, JSON.stringify(body));
    const sent = fake.requests.slice(before);
    const upload = sent.find((r) => r.path === '/upload/image')!;
    assert.equal(upload.method, 'POST');
    assert.deepEqual(upload.fields, [['type', 'input'], ['overwrite', 'true']]);
    assert.equal(upload.files!.length, 1);
    assert.equal(upload.files![0]!.field, 'image');
    assert.equal(upload.files![0]!.fileName, `gengate-${body.task_id}-image-0.png`);
    assert.equal(upload.files![0]!.type, 'image/png');
    assert.ok(upload.files![0]!.data.equals(input));
    const submit = sent.find((r) => r.path === '/prompt')!;
    assert.ok(sent.indexOf(upload) < sent.indexOf(submit), 'uploaded before the prompt is queued');
    const graph = (submit.json as Json).prompt;
    assert.equal(graph['10'].inputs.image, `gengate-${body.task_id}-image-0.png`);
    assert.equal(graph['6'].inputs.text, 'make it night');
    assert.equal(graph['3'].inputs.seed, 5);
    assert.deepEqual(body.mediaSize, { type: 'image', width: 40, height: 24, status: 1 });
  });

  it('fails the task with the node error ComfyUI reports', async () => {
    const { fake, user } = gateway;
    fake.failNode = { node: '3', message: 'CUDA out of memory. Tried to allocate 2.00 GiB', type: 'torch.OutOfMemoryError' };
    try {
      const res = await user.post('/v1/images/generations', { model: TEXT_TO_IMAGE, prompt: 'too big', steps: 2 });
      const body = (await res.json()) as Json;
      assert.equal(res.status, 502);
      assert.equal(body.error.code, 'task_failed');
      const record = await user.recordWhen(body.error.task_id, (r) => r.queue_status.status === 'failed');
      assert.equal(record.queue_status.message, 'the workflow failed at node 3 (KSampler): CUDA out of memory. Tried to allocate 2.00 GiB');
      assert.equal(record.queue_status.original_error_message, 'CUDA out of memory. Tried to allocate 2.00 GiB');
      assert.equal(record.node_status.status, 'failed');
      assert.equal(record.node_status.nodeId, '3');
      assert.equal(record.node_status.customWorkflowId, TEXT_TO_IMAGE);
    } finally {
      fake.failNode = undefined;
    }
  });

  it('fails the task with ComfyUI validation text when /prompt refuses the graph', async () => {
    const { user } = gateway;
    const res = await user.post('/v1/images/generations', { model: 'broken-checkpoint', prompt: 'anything' });
    const body = (await res.json()) as Json;
    assert.equal(res.status, 502);
    const record = await user.recordWhen(body.error.task_id, (r) => r.queue_status.status === 'failed');
    assert.equal(
      record.queue_status.message,
      `ComfyUI refused workflow broken-checkpoint: Prompt outputs failed validation; node 4 (CheckpointLoaderSimple): Value not in list: ckpt_name: 'missing.safetensors' not in ["v1-5-pruned-emaonly.safetensors","sd_xl_base_1.0.safetensors"]`,
    );
    const original = JSON.parse(record.queue_status.original_error_message);
    assert.equal(original.error.type, 'prompt_outputs_failed_validation');
    assert.equal(original.node_errors['4'].class_type, 'CheckpointLoaderSimple');
  });

  it('retries a 503 from /prompt and queues the prompt once', async () => {
    const { fake, user } = gateway;
    fake.inject('POST', '/prompt', { status: 503, body: { error: 'server busy' } });
    const before = fake.requestsTo('/prompt', 'POST').length;
    const res = await user.post('/v1/images/generations', { model: TEXT_TO_IMAGE, prompt: 'again', steps: 1, size: '32x32' });
    assert.equal(res.status, 200, await res.clone().text());
    const sent = fake.requestsTo('/prompt', 'POST').slice(before);
    assert.equal(sent.length, 2);
    assert.deepEqual(sent[0]!.json, sent[1]!.json);
  });

  it('passes the sampler\'s preview frames on as preview events of the task\'s stream, each a served image file', async () => {
    const { fake, user } = gateway;
    fake.hold();
    try {
      const taskId = await submitAsync(user, { model: TEXT_TO_IMAGE, prompt: 'a preview of a fox', steps: 3, size: '32x32' });
      const res = await fetch(`${user.srv.url}/v1/tasks/${taskId}/events`, { headers: { authorization: `Bearer ${user.token}` } });
      const { events } = await readTaskEvents(res, (got) => got.some((e) => e.event === 'preview'));
      const preview = events.find((e) => e.event === 'preview')!;
      assert.deepEqual(Object.keys(preview.data), ['url']);
      const served = await fetch(preview.data.url);
      assert.equal(served.status, 200);
      assert.equal(served.headers.get('content-type'), 'image/png');
      assert.ok(Buffer.from(await served.arrayBuffer()).equals(fake.previewImage), 'the bytes ComfyUI sent');
    } finally {
      fake.release();
    }
  });

  it('cancels a running prompt with /interrupt and a queued one by deleting it from the queue', async () => {
    const { fake, user } = gateway;
    fake.hold();
    try {
      const running = await submitAsync(user, { model: TEXT_TO_IMAGE, prompt: 'first', steps: 5, size: '32x32' });
      // Live node status: the sampler is running, held at its first step.
      const live = await user.recordWhen(running, (r) => r.node_status?.nodeId === '3' && r.queue_status.status === 'process');
      assert.equal(live.node_status.status, 'running');
      assert.equal(live.node_status.message, 'KSampler 1/5');
      const runningPrompt = live.node_status.executeId as string;
      assert.equal(fake.runningPromptId, runningPrompt);

      const queued = await submitAsync(user, { model: TEXT_TO_IMAGE, prompt: 'second', steps: 5, size: '32x32' });
      await fake.until(() => fake.pendingPromptIds.length === 1);
      const queuedPrompt = fake.pendingPromptIds[0]!;

      const cancelQueued = await user.cancel(queued);
      assert.equal(cancelQueued.status, 200);
      assert.equal(((await cancelQueued.json()) as Json).queue_status.status, 'cancelled');
      await fake.until(() => fake.pendingPromptIds.length === 0);
      assert.deepEqual(fake.requestsTo('/queue', 'POST').at(-1)!.json, { delete: [queuedPrompt] });

      const cancelRunning = await user.cancel(running);
      assert.equal(cancelRunning.status, 200);
      await fake.until(() => fake.runningPromptId === undefined);
      assert.deepEqual(fake.requestsTo('/interrupt', 'POST').at(-1)!.json, { prompt_id: runningPrompt });
      const history = (await (await fetch(`${fake.url}/history/${runningPrompt}`)).json()) as Json;
      assert.equal(history[runningPrompt].status.messages.at(-1)[0], 'execution_interrupted');
      assert.equal((await user.recordWhen(running, () => true)).queue_status.status, 'cancelled');
    } finally {
      fake.release();
    }
  });

  it('runs the deprecated workflow submit with its params bound', async () => {
    const { fake, user } = gateway;
    const res = await user.post('/v1/ai/generations', { model: TEXT_TO_IMAGE, params: { prompt: 'old api', width: 48, height: 32, seed: 9 } });
    assert.equal(res.status, 200);
    const { task_id: taskId } = (await res.json()) as Json;
    const record = await user.recordWhen(taskId, (r) => r.queue_status.status === 'success');
    assert.deepEqual(record.queue_status.data.mediaSize, { type: 'image', width: 48, height: 32, status: 1 });
    const graph = (fake.requestsTo('/prompt', 'POST').at(-1)!.json as Json).prompt;
    assert.deepEqual([graph['6'].inputs.text, graph['5'].inputs.width, graph['5'].inputs.height, graph['3'].inputs.seed], ['old api', 48, 32, 9]);
    assert.equal(record.generate_info.workflow._id, TEXT_TO_IMAGE);
  });

  it('resolves workflow names like models: unknown 404, wrong capability 400', async () => {
    const { user } = gateway;
    const unknown = await user.post('/v1/images/generations', { model: 'no-such-workflow', prompt: 'x' });
    assert.equal(unknown.status, 404);
    assert.equal(((await unknown.json()) as Json).error.code, 'model_not_found');
    const mismatch = await user.post('/v1/images/generations', { model: 'sd15-image-edit', prompt: 'x' });
    assert.equal(mismatch.status, 400);
    assert.equal(((await mismatch.json()) as Json).error.code, 'model_capability_mismatch');
  });

  it('lists the workflows in /v1/models/list with the capabilities their bindings declare', async () => {
    const { user } = gateway;
    const list = async (type: string) => ((await (await user.srv.fetch(`/v1/models/list?type=${type}`, { token: user.token })).json()) as Json).modelList as Json[];
    const all = await list('all');
    const example = all.find((m) => m.name === TEXT_TO_IMAGE);
    assert.deepEqual(example, {
      name: TEXT_TO_IMAGE,
      alias: TEXT_TO_IMAGE,
      description: loadExample().description,
      types: ['image_generate'],
      capabilities: { image_generate: { type: 'image_generate', allow_custom_width_height_size: true, output_multiple_images: true } },
      provider: 'comfyui',
      enabled: true,
    });
    assert.deepEqual(all.find((m) => m.name === 'sd15-image-edit').capabilities, {
      image_edit: { type: 'image_edit', allow_custom_width_height_size: false, output_multiple_images: false, input_parameters: [{ type: 'image', parameter: 'image' }], input_max_images_count: 1, input_multiple_images: false },
    });
    assert.ok(all.some((m) => m.name === 'gpt-image-1'), 'the catalog models are still listed');
    assert.deepEqual((await list('image_edit')).filter((m) => m.provider === 'comfyui').map((m) => m.name), ['sd15-image-edit']);
    assert.equal((await list('video_generate')).some((m) => m.provider === 'comfyui'), false);
    const compat = ((await (await user.srv.fetch('/v1/models', { token: user.token })).json()) as Json).data as Json[];
    assert.ok(compat.some((m) => m.id === 'sd15-image-edit' && m.owned_by === 'comfyui'));
  });

  it('serves a workflow file added or changed after the start without a restart; a bad file leaves the workflows as they were', async () => {
    const { user } = gateway;
    const names = async () => ((await (await user.srv.fetch('/v1/models/list', { token: user.token })).json()) as Json).modelList.filter((m: Json) => m.provider === 'comfyui').map((m: Json) => m.name).sort();
    const before = await names();
    const added = path.join(dir, 'sd15-added.json');
    fs.writeFileSync(added, JSON.stringify({ ...JSON.parse(fs.readFileSync(EXAMPLE, 'utf8')), description: 'added while running' }));
    assert.deepEqual(await names(), [...before, 'sd15-added'].sort());
    const run = await user.postOk('/v1/images/generations', { model: 'sd15-added', prompt: 'a new workflow' });
    assert.equal(run.status, 'success');

    // Changed: the edit workflow now also generates.
    const editFile = path.join(dir, 'sd15-image-edit.json');
    fs.writeFileSync(editFile, JSON.stringify({ ...IMAGE_EDIT, capabilities: ['image_edit', 'image_generate'] }));
    const changed = await user.post('/v1/images/generations', { model: 'sd15-image-edit', prompt: 'x', image: 'data:image/png;base64,' + (await sharp({ create: { width: 8, height: 8, channels: 3, background: '#fff' } }).png().toBuffer()).toString('base64') });
    assert.notEqual(changed.status, 400, 'image_generate is accepted once the file says so');
    await changed.arrayBuffer();

    fs.writeFileSync(path.join(dir, 'bad.json'), '{ not json');
    assert.deepEqual(await names(), [...before, 'sd15-added'].sort(), 'the bad file changes nothing');
    fs.rmSync(path.join(dir, 'bad.json'));
    fs.rmSync(added);
    fs.writeFileSync(editFile, JSON.stringify(IMAGE_EDIT));
    assert.deepEqual(await names(), before);
  });
});

describe('ComfyUI adapter: polling, timeouts and restarts', () => {
  let fake: FakeComfyUI;
  let dir: string;

  before(async () => {
    fake = await FakeComfyUI.start();
    dir = workflowsDir();
  });

  after(async () => {
    await fake?.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('polls /history when the WebSocket is unavailable', async () => {
    fake.wsEnabled = false;
    try {
      await withGateway(gatewayEnv(fake, dir), 'artist', async (user) => {
        const sockets = fake.socketClients.length;
        const before = fake.requests.length;
        const res = await user.post('/v1/images/generations', { model: TEXT_TO_IMAGE, prompt: 'no socket', steps: 2, size: '32x32' });
        const body = (await res.json()) as Json;
        assert.equal(res.status, 200, JSON.stringify(body));
        assert.equal(fake.socketClients.length, sockets, 'no socket was opened');
        const promptId = (await user.recordWhen(body.task_id, () => true)).node_status.executeId;
        const polls = fake.requests.slice(before).filter((r) => r.path === `/history/${promptId}`);
        assert.ok(polls.length >= 1, 'the outcome came from /history');
        const meta = await sharp(Buffer.from(await (await fetch(body.data[0].url)).arrayBuffer())).metadata();
        assert.deepEqual([meta.width, meta.height], [32, 32]);
      });
    } finally {
      fake.wsEnabled = true;
    }
  });

  it('fails a run past max_wait_ms and interrupts it in ComfyUI', async () => {
    fake.hold();
    try {
      await withGateway(gatewayEnv(fake, dir, { max_wait_ms: 300 }), 'artist', async (user) => {
        const res = await user.post('/v1/images/generations', { model: TEXT_TO_IMAGE, prompt: 'forever', steps: 3, size: '32x32' });
        const body = (await res.json()) as Json;
        assert.equal(res.status, 502);
        const record = await user.recordWhen(body.error.task_id, (r) => r.queue_status.status === 'failed');
        assert.equal(record.queue_status.message, 'the workflow did not finish within 0.3 s');
        const promptId = (fake.requestsTo('/interrupt', 'POST').at(-1)?.json as Json)?.prompt_id;
        assert.equal(typeof promptId, 'string');
        await fake.until(() => fake.runningPromptId === undefined);
      });
    } finally {
      fake.release();
    }
  });

  it('a run resumed after a restart watches the queued prompt instead of queueing it again', async () => {
    fake.hold();
    try {
      await withRestartingGateway({ ...gatewayEnv(fake, dir), TASK_LEASE_MS: '1000' }, 'artist', async (restarting) => {
        const submits = fake.requestsTo('/prompt', 'POST').length;
        const taskId = await submitAsync(restarting.user, { model: TEXT_TO_IMAGE, prompt: 'survives restarts', steps: 3, size: '32x32' });
        await restarting.user.recordWhen(taskId, (r) => r.node_status?.nodeId === '3');
        const user = await restarting.restart();
        await user.recordWhen(taskId, (r) => r.queue_status.message === 'resumed after an interruption');
        fake.release();
        const record = await user.recordWhen(taskId, (r) => r.queue_status.status === 'success');
        assert.equal(fake.requestsTo('/prompt', 'POST').length - submits, 1, 'one prompt queued in ComfyUI');
        assert.equal(record.queue_status.output_content.length, 1);
        assert.equal(record.node_status.status, 'success');
      });
    } finally {
      fake.release();
    }
  });
});
