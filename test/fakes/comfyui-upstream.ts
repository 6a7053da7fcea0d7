import type http from 'node:http';
import { randomUUID, createHash } from 'node:crypto';
import type { Duplex } from 'node:stream';
import sharp from 'sharp';
import { WebSocketServer, type WebSocket } from 'ws';
import { RecordingUpstream, type RecordedRequest } from './recording-upstream.ts';

type ApiNode = { class_type: string; inputs: Record<string, unknown> };
type ApiPrompt = Record<string, ApiNode>;

interface InputSpec {
  kind: 'INT' | 'FLOAT' | 'STRING' | 'LIST' | 'LINK' | 'UPLOAD';
  min?: number;
  max?: number;
  options?: string[];
}

/** The checkpoints this fake ComfyUI has in models/checkpoints. */
export const FAKE_CHECKPOINTS = ['v1-5-pruned-emaonly.safetensors', 'sd_xl_base_1.0.safetensors'];
const SAMPLERS = ['euler', 'euler_ancestral', 'dpmpp_2m', 'dpmpp_sde'];
const SCHEDULERS = ['normal', 'karras', 'simple'];

/** The node types the fake knows, with their required inputs (a subset of ComfyUI's object_info). */
const NODE_TYPES: Record<string, { inputs: Record<string, InputSpec>; output?: boolean }> = {
  CheckpointLoaderSimple: { inputs: { ckpt_name: { kind: 'LIST', options: FAKE_CHECKPOINTS } } },
  CLIPTextEncode: { inputs: { text: { kind: 'STRING' }, clip: { kind: 'LINK' } } },
  EmptyLatentImage: { inputs: { width: { kind: 'INT', min: 16, max: 16384 }, height: { kind: 'INT', min: 16, max: 16384 }, batch_size: { kind: 'INT', min: 1, max: 4096 } } },
  KSampler: {
    inputs: {
      model: { kind: 'LINK' }, seed: { kind: 'INT', min: 0, max: 2 ** 64 - 1 }, steps: { kind: 'INT', min: 1, max: 10000 }, cfg: { kind: 'FLOAT', min: 0, max: 100 },
      sampler_name: { kind: 'LIST', options: SAMPLERS }, scheduler: { kind: 'LIST', options: SCHEDULERS },
      positive: { kind: 'LINK' }, negative: { kind: 'LINK' }, latent_image: { kind: 'LINK' }, denoise: { kind: 'FLOAT', min: 0, max: 1 },
    },
  },
  VAEDecode: { inputs: { samples: { kind: 'LINK' }, vae: { kind: 'LINK' } } },
  VAEEncode: { inputs: { pixels: { kind: 'LINK' }, vae: { kind: 'LINK' } } },
  LoadImage: { inputs: { image: { kind: 'UPLOAD' } } },
  SaveImage: { inputs: { images: { kind: 'LINK' }, filename_prefix: { kind: 'STRING' } }, output: true },
  PreviewImage: { inputs: { images: { kind: 'LINK' } }, output: true },
};

interface QueuedPrompt {
  number: number;
  id: string;
  prompt: ApiPrompt;
  clientId: string | undefined;
  outputs: string[];
  interrupted?: boolean;
}

/** The stored key of an input file named as LoadImage names it: `name` or `subfolder/name`. */
function inputKey(value: unknown): string {
  const parts = String(value).split('/');
  return `input/${parts.slice(0, -1).join('/')}/${parts.at(-1)}`;
}

const isLink = (value: unknown): value is [string, number] => Array.isArray(value) && value.length === 2 && typeof value[0] === 'string' && typeof value[1] === 'number';

/**
 * A fake ComfyUI server on 127.0.0.1 (execution API of ComfyUI's server.py): POST /prompt with
 * graph validation and ComfyUI's error shapes, POST /upload/image, GET /queue, POST /queue
 * (delete, clear), POST /interrupt, GET /history/{id}, GET /view, and the /ws?clientId= socket
 * with status, execution_start, execution_cached, executing, progress, executed,
 * execution_success / execution_error / execution_interrupted messages. Prompts run one at a
 * time; SaveImage writes real PNG files made with sharp. Every request is recorded; tests can
 * hold a run at its sampler, fail a node, inject answers and turn the WebSocket off.
 */
export class FakeComfyUI extends RecordingUpstream {
  /** Client ids of the WebSocket connections opened, in order. */
  readonly socketClients: string[] = [];
  /** When false, WebSocket upgrades are refused with 404 (a proxy without WebSocket support). */
  wsEnabled = true;
  /** The preview image a sampler sends at its first step. */
  readonly previewImage = Buffer.from('89504e470d0a1a0a0000000d4948445200000001000000010806000000' + '1f15c4890000000d49444154789c6360f8cfc0000003010100c9fe92ef0000000049454e44ae426082', 'hex');
  /** Makes the node with this id fail when it runs. */
  failNode: { node: string; message: string; type: string } | undefined;
  private readonly wss = new WebSocketServer({ noServer: true });
  private readonly sockets = new Map<string, WebSocket>();
  private readonly files = new Map<string, Buffer>();
  private readonly history = new Map<string, Record<string, unknown>>();
  private readonly pending: QueuedPrompt[] = [];
  private running: QueuedPrompt | undefined;
  private number = 0;
  private counter = 0;
  private gate: { promise: Promise<void>; open: () => void } | undefined;

  static start(): Promise<FakeComfyUI> {
    return new FakeComfyUI().listen();
  }

  /** Runs pause at the first sampler step (after reporting it) until release() or an interrupt. */
  hold(): void {
    let open!: () => void;
    const promise = new Promise<void>((resolve) => (open = resolve));
    this.gate = { promise, open };
  }

  release(): void {
    this.gate?.open();
    this.gate = undefined;
  }

  /** The id of the prompt running now. */
  get runningPromptId(): string | undefined {
    return this.running?.id;
  }

  get pendingPromptIds(): string[] {
    return this.pending.map((p) => p.id);
  }

  /** A file the fake stored (an upload or an output), by type and name. */
  file(type: string, name: string, subfolder = ''): Buffer | undefined {
    return this.files.get(`${type}/${subfolder}/${name}`);
  }

  override async close(): Promise<void> {
    this.release();
    for (const ws of this.sockets.values()) ws.terminate();
    this.wss.close();
    await super.close();
  }

  protected override upgrade(req: http.IncomingMessage, socket: Duplex, head: Buffer): void {
    const url = new URL(req.url!, 'http://x');
    if (url.pathname !== '/ws' || !this.wsEnabled) {
      socket.end('HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n');
      return;
    }
    // Like ComfyUI: a client id is reused (its old socket dropped), else one is made up.
    const clientId = url.searchParams.get('clientId') || randomUUID().replaceAll('-', '');
    this.wss.handleUpgrade(req, socket, head, (ws) => {
      this.sockets.get(clientId)?.terminate();
      this.sockets.set(clientId, ws);
      this.socketClients.push(clientId);
      ws.on('close', () => {
        if (this.sockets.get(clientId) === ws) this.sockets.delete(clientId);
      });
      ws.send(JSON.stringify({ type: 'status', data: { status: { exec_info: { queue_remaining: this.queueRemaining() } }, sid: clientId } }));
      this.notify();
    });
  }

  private queueRemaining(): number {
    return this.pending.length + (this.running ? 1 : 0);
  }

  /** ComfyUI's send_sync: to the prompt's client when it has one, else (for a few types) to everyone. */
  /** A plain preview frame, as ComfyUI sends a sampler's latent preview to the prompt's client: type 1, format 2 (PNG), the image. */
  private sendPreview(clientId: string | undefined, png: Buffer): void {
    const head = Buffer.alloc(8);
    head.writeUInt32BE(1, 0);
    head.writeUInt32BE(2, 4);
    if (clientId) this.sockets.get(clientId)?.send(Buffer.concat([head, png]), { binary: true });
  }

  private send(clientId: string | undefined, type: string, data: Record<string, unknown>): void {
    const text = JSON.stringify({ type, data });
    if (clientId) this.sockets.get(clientId)?.send(text);
    else if (type === 'progress' || type === 'execution_interrupted' || type === 'status') for (const ws of this.sockets.values()) ws.send(text);
  }

  private broadcastStatus(): void {
    this.send(undefined, 'status', { status: { exec_info: { queue_remaining: this.queueRemaining() } } });
  }

  protected handle(req: RecordedRequest, res: http.ServerResponse): void {
    const path = req.path.replace(/^\/api(?=\/)/, '');
    const body = (req.json ?? {}) as Record<string, unknown>;
    const fields = Object.fromEntries(req.fields ?? []);
    const json = (status: number, answer: unknown) => res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(answer));

    if (req.method === 'POST' && path === '/prompt') return void json(...this.queuePrompt(req.json as Record<string, unknown> | undefined));
    if (req.method === 'GET' && path === '/queue') {
      const entry = (p: QueuedPrompt) => [p.number, p.id, p.prompt, { client_id: p.clientId }, p.outputs];
      return void json(200, { queue_running: this.running ? [entry(this.running)] : [], queue_pending: this.pending.map(entry) });
    }
    if (req.method === 'POST' && path === '/queue') {
      if (body.clear === true) this.pending.splice(0);
      for (const id of Array.isArray(body.delete) ? body.delete : []) {
        const i = this.pending.findIndex((p) => p.id === id);
        if (i >= 0) this.pending.splice(i, 1);
      }
      this.broadcastStatus();
      return void res.writeHead(200).end();
    }
    if (req.method === 'POST' && path === '/interrupt') {
      const target = body.prompt_id;
      // With a prompt_id, only that prompt is interrupted, and only while it runs.
      if (this.running && (target === undefined || target === this.running.id)) {
        this.running.interrupted = true;
        this.gate?.open();
      }
      return void res.writeHead(200).end();
    }
    if (req.method === 'GET' && path.startsWith('/history/')) {
      const id = decodeURIComponent(path.slice('/history/'.length));
      const entry = this.history.get(id);
      return void json(200, entry ? { [id]: entry } : {});
    }
    if (req.method === 'GET' && path === '/view') {
      const { filename, subfolder = '', type = 'output' } = req.query;
      if (!filename) return void res.writeHead(400).end();
      if (filename.startsWith('/') || filename.includes('..')) return void res.writeHead(400).end();
      const data = this.files.get(`${type}/${subfolder}/${filename}`);
      if (!data) return void res.writeHead(404).end();
      return void res.writeHead(200, { 'content-type': 'image/png', 'content-disposition': `filename="${filename}"` }).end(data);
    }
    if (req.method === 'POST' && path === '/upload/image') {
      const image = req.files?.find((f) => f.field === 'image');
      if (!image || !image.fileName) return void res.writeHead(400).end();
      const type = fields.type || 'input';
      const subfolder = fields.subfolder ?? '';
      let name = image.fileName;
      if (fields.overwrite !== 'true' && fields.overwrite !== '1') {
        const dot = name.lastIndexOf('.');
        for (let i = 1; this.files.has(`${type}/${subfolder}/${name}`) && !this.files.get(`${type}/${subfolder}/${name}`)!.equals(image.data); i++) {
          name = `${image.fileName.slice(0, dot)} (${i})${image.fileName.slice(dot)}`;
        }
      }
      this.files.set(`${type}/${subfolder}/${name}`, image.data);
      return void json(200, { name, subfolder, type });
    }
    res.writeHead(404).end();
  }

  /** POST /prompt: validates like ComfyUI's validate_prompt and queues the prompt. */
  private queuePrompt(body: Record<string, unknown> | undefined): [number, unknown] {
    const fail = (type: string, message: string, details: string, nodeErrors: unknown = {}): [number, unknown] => [400, { error: { type, message, details, extra_info: {} }, node_errors: nodeErrors }];
    const prompt = body?.prompt as ApiPrompt | undefined;
    if (!prompt || typeof prompt !== 'object') return fail('no_prompt', 'No prompt provided', 'No prompt provided', []);
    for (const [id, node] of Object.entries(prompt)) {
      if (!node || typeof node !== 'object' || typeof node.class_type !== 'string') return fail('invalid_prompt', `Cannot execute because a node is missing the class_type property.`, `Node ID '#${id}'`);
      if (!NODE_TYPES[node.class_type]) return fail('invalid_prompt', `Cannot execute because node ${node.class_type} does not exist.`, `Node ID '#${id}'`);
    }
    const outputs = Object.entries(prompt).filter(([, node]) => NODE_TYPES[node.class_type]!.output).map(([id]) => id);
    if (outputs.length === 0) return fail('prompt_no_outputs', 'Prompt has no outputs', '', []);
    const nodeErrors: Record<string, unknown> = {};
    for (const [id, node] of Object.entries(prompt)) {
      const errors = this.validateNode(prompt, node);
      if (errors.length > 0) nodeErrors[id] = { errors, dependent_outputs: outputs, class_type: node.class_type };
    }
    if (Object.keys(nodeErrors).length > 0) return fail('prompt_outputs_failed_validation', 'Prompt outputs failed validation', '', nodeErrors);
    const queued: QueuedPrompt = { number: this.number++, id: randomUUID(), prompt, clientId: typeof body!.client_id === 'string' ? body!.client_id : undefined, outputs };
    this.pending.push(queued);
    this.broadcastStatus();
    setImmediate(() => this.pump());
    return [200, { prompt_id: queued.id, number: queued.number, node_errors: {} }];
  }

  private validateNode(prompt: ApiPrompt, node: ApiNode): Record<string, unknown>[] {
    const errors: Record<string, unknown>[] = [];
    for (const [name, spec] of Object.entries(NODE_TYPES[node.class_type]!.inputs)) {
      const value = node.inputs?.[name];
      if (value === undefined) {
        errors.push({ type: 'required_input_missing', message: 'Required input is missing', details: name, extra_info: { input_name: name } });
        continue;
      }
      if (isLink(value)) {
        if (!(value[0] in prompt)) errors.push({ type: 'exception_during_inner_validation', message: 'Exception when validating inner node', details: `${name}: node ${value[0]} does not exist`, extra_info: { input_name: name } });
        continue;
      }
      if (spec.kind === 'LINK') {
        errors.push({ type: 'invalid_input_type', message: 'Input must be a link', details: name, extra_info: { input_name: name } });
      } else if (spec.kind === 'INT' || spec.kind === 'FLOAT') {
        const number = Number(value);
        if (typeof value === 'boolean' || !Number.isFinite(number) || (spec.kind === 'INT' && !Number.isInteger(number))) {
          errors.push({ type: 'invalid_input_type', message: `Failed to convert an input value to a ${spec.kind} value`, details: `${name}, ${String(value)}`, extra_info: { input_name: name } });
        } else if (spec.min !== undefined && number < spec.min) {
          errors.push({ type: 'value_smaller_than_min', message: `Value ${number} smaller than min of ${spec.min}`, details: name, extra_info: { input_name: name } });
        } else if (spec.max !== undefined && number > spec.max) {
          errors.push({ type: 'value_bigger_than_max', message: `Value ${number} bigger than max of ${spec.max}`, details: name, extra_info: { input_name: name } });
        }
      } else if (spec.kind === 'LIST' && !spec.options!.includes(String(value))) {
        errors.push({ type: 'value_not_in_list', message: 'Value not in list', details: `${name}: '${String(value)}' not in ${JSON.stringify(spec.options)}`, extra_info: { input_name: name } });
      } else if (spec.kind === 'UPLOAD' && !this.files.has(inputKey(value))) {
        errors.push({ type: 'custom_validation_failed', message: 'Custom validation failed for node', details: `${name} - Invalid image file: ${String(value)}`, extra_info: { input_name: name } });
      }
    }
    return errors;
  }

  private pump(): void {
    if (this.running) return;
    const next = this.pending.shift();
    if (!next) return;
    this.running = next;
    this.notify();
    void this.execute(next).finally(() => {
      this.running = undefined;
      this.broadcastStatus();
      this.notify();
      this.pump();
    });
  }

  /** Nodes the outputs need, dependencies first. */
  private order(prompt: ApiPrompt, outputs: string[]): string[] {
    const seen = new Set<string>();
    const order: string[] = [];
    const visit = (id: string) => {
      if (seen.has(id)) return;
      seen.add(id);
      for (const value of Object.values(prompt[id]!.inputs)) if (isLink(value)) visit(value[0]);
      order.push(id);
    };
    for (const id of outputs) visit(id);
    return order;
  }

  /** Width, height and batch size of the images a node's output holds. */
  private async dims(prompt: ApiPrompt, id: string): Promise<{ width: number; height: number; batch: number }> {
    const node = prompt[id]!;
    const follow = (input: string) => this.dims(prompt, (node.inputs[input] as [string, number])[0]);
    switch (node.class_type) {
      case 'EmptyLatentImage':
        return { width: Number(node.inputs.width), height: Number(node.inputs.height), batch: Number(node.inputs.batch_size) };
      case 'LoadImage': {
        const meta = await sharp(this.files.get(inputKey(node.inputs.image))).metadata();
        return { width: meta.width!, height: meta.height!, batch: 1 };
      }
      case 'KSampler':
        return follow('latent_image');
      case 'VAEDecode':
        return follow('samples');
      case 'VAEEncode':
        return follow('pixels');
      default:
        return follow('images');
    }
  }

  private async execute(run: QueuedPrompt): Promise<void> {
    const { id: promptId, prompt, clientId } = run;
    const now = () => Date.now();
    const messages: [string, Record<string, unknown>][] = [];
    const message = (type: string, data: Record<string, unknown>, keep = true) => {
      if (keep) messages.push([type, data]);
      this.send(clientId, type, data);
    };
    const executed: string[] = [];
    const outputs: Record<string, unknown> = {};
    const finish = (status: 'success' | 'error') => {
      this.history.set(promptId, {
        prompt: [run.number, promptId, prompt, { client_id: clientId }, run.outputs],
        outputs,
        status: { status_str: status, completed: status === 'success', messages },
        meta: Object.fromEntries(Object.keys(outputs).map((node) => [node, { node_id: node, display_node: node, parent_node: null, real_node_id: node }])),
      });
      // ComfyUI writes the history before it announces the end with `executing` node null.
      this.send(clientId, 'executing', { node: null, prompt_id: promptId });
    };
    const interrupted = (node: string) => {
      message('execution_interrupted', { prompt_id: promptId, node_id: node, node_type: prompt[node]!.class_type, executed, timestamp: now() });
      finish('error');
    };
    message('execution_start', { prompt_id: promptId, timestamp: now() });
    message('execution_cached', { nodes: [], prompt_id: promptId, timestamp: now() });
    for (const node of this.order(prompt, run.outputs)) {
      await new Promise((resolve) => setImmediate(resolve));
      if (run.interrupted) return interrupted(node);
      message('executing', { node, display_node: node, prompt_id: promptId }, false);
      const { class_type: classType, inputs } = prompt[node]!;
      if (this.failNode?.node === node) {
        message('execution_error', {
          prompt_id: promptId, node_id: node, node_type: classType, executed, exception_message: this.failNode.message, exception_type: this.failNode.type,
          traceback: ['  File "execution.py", line 1, in execute\n'], current_inputs: {}, current_outputs: {}, timestamp: now(),
        });
        return finish('error');
      }
      if (classType === 'KSampler') {
        const steps = Number(inputs.steps);
        for (let step = 1; step <= steps; step++) {
          this.send(clientId, 'progress', { value: step, max: steps, prompt_id: promptId, node });
          if (step === 1) this.sendPreview(clientId, this.previewImage);
          if (step === 1 && this.gate) {
            this.notify();
            await this.gate.promise;
          }
          if (run.interrupted) return interrupted(node);
          await new Promise((resolve) => setImmediate(resolve));
        }
      }
      if (classType === 'SaveImage' || classType === 'PreviewImage') {
        const { width, height, batch } = await this.dims(prompt, node);
        const images = [];
        for (let i = 0; i < batch; i++) {
          const seed = createHash('sha256').update(`${JSON.stringify(prompt)}#${i}`).digest();
          const png = await sharp({ create: { width, height, channels: 3, background: { r: seed[0]!, g: seed[1]!, b: seed[2]! } } }).png().toBuffer();
          const type = classType === 'SaveImage' ? 'output' : 'temp';
          const prefix = classType === 'SaveImage' ? String(inputs.filename_prefix) : 'ComfyUI_temp';
          const filename = `${prefix}_${String(++this.counter).padStart(5, '0')}_.png`;
          this.files.set(`${type}//${filename}`, png);
          images.push({ filename, subfolder: '', type });
        }
        outputs[node] = { images };
        message('executed', { node, display_node: node, output: { images }, prompt_id: promptId }, false);
      }
      executed.push(node);
    }
    message('execution_success', { prompt_id: promptId, timestamp: now() });
    finish('success');
  }
}
