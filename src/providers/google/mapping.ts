/**
 * OpenAI chat requests as Gemini `generateContent` requests, and Gemini's answers (whole or as
 * server-sent events) as OpenAI chat completions and chunks.
 */
import { randomBytes } from 'node:crypto';
import mime from 'mime-types';
import { ApiError } from '../../core/errors.ts';
import { choiceOf, contentText, nowSeconds, parseDataUri, refuseParams, toolArguments } from '../chat-conversion.ts';
import { streamFrame, type StreamTranslator } from '../chat-sse.ts';
import { readAnswer } from '../upstream-reply.ts';
import { GeminiResponse, type GeminiAnswerPart, type UsageMetadata } from './reply-schemas.ts';
import type { ChatChunk, ChatCompletion, ChatContentPart, ChatFinishReason, ChatMessage, ChatRequest, ChatTool, ChatToolCall, ChatToolChoice, ChatUsage } from '../spec.ts';

/** OpenAI parameters Gemini has no counterpart for (`n` above 1 included). */
const UNSUPPORTED = ['n', 'logprobs', 'top_logprobs', 'logit_bias', 'reasoning_effort'];

/** OpenAI parameters this mapping turns into Gemini fields; every other key passes on as a top-level field (safetySettings, cachedContent, …). */
const MAPPED = new Set(['temperature', 'top_p', 'top_k', 'max_tokens', 'max_completion_tokens', 'stop', 'seed', 'presence_penalty', 'frequency_penalty', 'response_format', 'tools', 'tool_choice', 'parallel_tool_calls', 'user', 'stream_options', 'generationConfig', ...UNSUPPORTED]);

type Part =
  | { text: string; thought?: boolean }
  | { inlineData: { mimeType: string; data: string } }
  | { fileData: { mimeType: string; fileUri: string } }
  | { functionCall: { id?: string; name: string; args?: Record<string, unknown> } }
  | { functionResponse: { name: string; response: Record<string, unknown> } };

interface Content {
  role: 'user' | 'model';
  parts: Part[];
}

/** The type of media at a URL, from its file name, else what the part says it is. */
function mimeTypeOf(url: string, fallback: string): string {
  let path = url;
  try {
    path = new URL(url).pathname;
  } catch {
    // not a URL: the reference itself is the name
  }
  return mime.lookup(path) || fallback;
}

/** Media by reference: a data URI goes inline, a URL as file data Gemini fetches itself. */
function mediaPart(url: string, fallbackType: string): Part {
  const inline = parseDataUri(url);
  return inline ? { inlineData: { mimeType: inline.mimeType, data: inline.data } } : { fileData: { mimeType: mimeTypeOf(url, fallbackType), fileUri: url } };
}

function partOf(part: ChatContentPart): Part {
  switch (part.type) {
    case 'text':
      return { text: part.text };
    case 'image_url':
      return mediaPart(part.image_url.url, 'image/jpeg');
    case 'video_url':
      return mediaPart(part.video_url.url, 'video/mp4');
    case 'input_audio':
      return mediaPart(part.input_audio.url, part.input_audio.format ? mime.lookup(part.input_audio.format) || `audio/${part.input_audio.format}` : 'audio/wav');
    case 'audio_url':
      return mediaPart(part.audio_url.url, 'audio/mpeg');
    case 'file_url':
      return mediaPart(part.file_url.url, mime.lookup(part.file_url.file_name ?? '') || 'application/pdf');
  }
}

function partsOf(content: ChatMessage['content']): Part[] {
  if (content === null) return [];
  if (typeof content === 'string') return content === '' ? [] : [{ text: content }];
  return content.map(partOf);
}

/** A tool's output as a function response: a JSON object as it is, anything else as `output` (the Gemini SDKs' convention). */
function responseOf(content: ChatMessage['content']): Record<string, unknown> {
  const text = contentText(content);
  try {
    const value: unknown = JSON.parse(text);
    if (value !== null && typeof value === 'object' && !Array.isArray(value)) return value as Record<string, unknown>;
  } catch {
    // plain text
  }
  return { output: text };
}

/**
 * The conversation as Gemini contents: assistant turns as `model` with their function calls, tool
 * messages as function responses (named after the call they answer; Gemini has no call ids) in
 * one `user` turn per run of results.
 */
function contentsOf(messages: ChatMessage[]): { system: Part[]; contents: Content[] } {
  const system: Part[] = [];
  const contents: Content[] = [];
  const callNames = new Map<string, string>();
  let results: Part[] | undefined;
  messages.forEach((message, i) => {
    if (message.role === 'tool') {
      const name = callNames.get(message.tool_call_id ?? '');
      if (name === undefined) throw new ApiError('invalid_parameter', `messages[${i}].tool_call_id answers no tool call of an earlier assistant message`, `messages[${i}].tool_call_id`);
      const part: Part = { functionResponse: { name, response: responseOf(message.content) } };
      if (results) results.push(part);
      else contents.push({ role: 'user', parts: (results = [part]) });
      return;
    }
    results = undefined;
    if (message.role === 'system' || message.role === 'developer') system.push(...partsOf(message.content));
    if (message.role === 'user') contents.push({ role: 'user', parts: partsOf(message.content) });
    if (message.role === 'assistant') {
      const calls: Part[] = (message.tool_calls ?? []).map((call, j) => {
        callNames.set(call.id, call.function.name);
        return { functionCall: { name: call.function.name, args: toolArguments(call, `messages[${i}].tool_calls[${j}].function.arguments`) } };
      });
      const parts = [...partsOf(message.content), ...calls];
      if (parts.length > 0) contents.push({ role: 'model', parts });
    }
  });
  return { system, contents };
}

function declarationOf(tool: ChatTool) {
  const { name, description, parameters } = tool.function;
  return { name, ...(description !== undefined ? { description } : {}), ...(parameters !== undefined ? { parametersJsonSchema: parameters } : {}) };
}

function toolConfigOf(choice: ChatToolChoice | undefined) {
  if (choice === undefined) return undefined;
  if (typeof choice === 'object') return { functionCallingConfig: { mode: 'ANY', allowedFunctionNames: [choice.function.name] } };
  return { functionCallingConfig: { mode: choice === 'required' ? 'ANY' : choice === 'none' ? 'NONE' : 'AUTO' } };
}

/** `response_format` as Gemini's response type and schema. */
function responseFormatOf(format: ChatRequest['params']['response_format']): Record<string, unknown> {
  if (!format || format.type === 'text') return {};
  const schema = (format.json_schema as { schema?: unknown } | undefined)?.schema;
  return { responseMimeType: 'application/json', ...(format.type === 'json_schema' && schema !== undefined ? { responseJsonSchema: schema } : {}) };
}

/** Keeps the entries whose value is set. */
const defined = (entries: Record<string, unknown>) => Object.fromEntries(Object.entries(entries).filter(([, value]) => value !== undefined && value !== null));

/** The `generateContent` body of a chat call (the model is named in the path). */
export function generateBody(request: ChatRequest, provider: string): Record<string, unknown> {
  const { params } = request;
  refuseParams(params, provider, UNSUPPORTED);
  const { system, contents } = contentsOf(request.messages);
  const generationConfig = {
    ...defined({
      maxOutputTokens: params.max_tokens ?? params.max_completion_tokens,
      temperature: params.temperature,
      topP: params.top_p,
      topK: params.top_k,
      stopSequences: typeof params.stop === 'string' ? [params.stop] : params.stop,
      seed: params.seed,
      presencePenalty: params.presence_penalty,
      frequencyPenalty: params.frequency_penalty,
    }),
    ...responseFormatOf(params.response_format),
    ...(params.generationConfig as Record<string, unknown> | undefined),
  };
  const toolConfig = params.tools?.length ? toolConfigOf(params.tool_choice) : undefined;
  return {
    contents,
    ...(system.length > 0 ? { systemInstruction: { parts: system } } : {}),
    ...(Object.keys(generationConfig).length > 0 ? { generationConfig } : {}),
    ...(params.tools?.length ? { tools: [{ functionDeclarations: params.tools.map(declarationOf) }] } : {}),
    ...(toolConfig ? { toolConfig } : {}),
    ...Object.fromEntries(Object.entries(params).filter(([key]) => !MAPPED.has(key))),
  };
}

/** Gemini's usage in OpenAI's shape: thinking counts as completion (it is billed as output), cached input is detailed. */
export function usageOf(usage: UsageMetadata): ChatUsage {
  const prompt = usage.promptTokenCount ?? 0;
  const thoughts = usage.thoughtsTokenCount ?? 0;
  const completion = (usage.candidatesTokenCount ?? 0) + thoughts;
  return {
    prompt_tokens: prompt,
    completion_tokens: completion,
    total_tokens: usage.totalTokenCount ?? prompt + completion,
    prompt_tokens_details: { cached_tokens: usage.cachedContentTokenCount ?? 0 },
    completion_tokens_details: { reasoning_tokens: thoughts },
  };
}

/** Gemini's finish reasons as OpenAI's: a stop or a broken tool call is `stop`, a length limit `length`, every block `content_filter`. */
export function finishReasonOf(reason: string | undefined): ChatFinishReason {
  switch (reason) {
    case undefined:
    case 'STOP':
    case 'FINISH_REASON_UNSPECIFIED':
    case 'MALFORMED_FUNCTION_CALL':
    case 'UNEXPECTED_TOOL_CALL':
    case 'TOO_MANY_TOOL_CALLS':
    case 'MISSING_THOUGHT_SIGNATURE':
      return 'stop';
    case 'MAX_TOKENS':
      return 'length';
    default:
      return 'content_filter';
  }
}

/** A call id for a function call: Gemini names calls only by function. */
const callId = () => `call_${randomBytes(12).toString('hex')}`;

/** The visible text and the function calls of a candidate's parts (thought summaries are left out). */
function readParts(parts: GeminiAnswerPart[]): { text: string[]; calls: ChatToolCall[] } {
  const text: string[] = [];
  const calls: ChatToolCall[] = [];
  for (const part of parts) {
    if (part.text !== undefined && !part.thought) text.push(part.text);
    if (part.functionCall) calls.push({ id: part.functionCall.id ?? callId(), type: 'function', function: { name: part.functionCall.name, arguments: JSON.stringify(part.functionCall.args ?? {}) } });
  }
  return { text, calls };
}

/** The finish reason of a candidate: `tool_calls` whenever it calls functions (Gemini says STOP then). */
function finishOf(reason: string | undefined, hasCalls: boolean): ChatFinishReason {
  return hasCalls ? 'tool_calls' : finishReasonOf(reason);
}

/** A `generateContent` answer as a chat completion; a blocked prompt (no candidates) answers nothing with `content_filter`. */
export function completionOf(reply: unknown, provider: string, model: string): ChatCompletion {
  const answer = readAnswer(GeminiResponse, reply, provider);
  const candidate = answer.candidates?.[0];
  const { text, calls } = readParts(candidate?.content?.parts ?? []);
  return {
    id: answer.responseId ?? callId(),
    object: 'chat.completion',
    created: nowSeconds(),
    model: answer.modelVersion ?? model,
    choices: [choiceOf(text.length > 0 ? text.join('') : null, calls, candidate ? finishOf(candidate.finishReason, calls.length > 0) : 'content_filter')],
    usage: usageOf(answer.usageMetadata ?? {}),
  };
}

/**
 * Gemini's stream (`streamGenerateContent?alt=sse`: whole responses holding only the new parts,
 * no end marker) as chat chunks: the first frame opens the assistant message, text parts become
 * content, each function call a whole tool call, the finish reason (on the last frame) a finish
 * chunk, and the last cumulative usage the closing usage chunk. A stream that ends without a
 * finish reason, or a frame holding an error, fails.
 */
export class GeminiStream implements StreamTranslator {
  readonly finished = false;
  private id = '';
  private model: string;
  private readonly created = nowSeconds();
  private usage: UsageMetadata = {};
  private toolCalls = 0;
  private finishReason: ChatFinishReason | undefined;

  private readonly provider: string;

  constructor(
    provider: string,
    model: string,
  ) {
    this.provider = provider;
    this.model = model;
  }

  private chunk(delta: ChatChunk['choices'][number]['delta'], finishReason: ChatFinishReason | null = null): ChatChunk {
    return { id: this.id, object: 'chat.completion.chunk', created: this.created, model: this.model, choices: [{ index: 0, delta, finish_reason: finishReason }] };
  }

  push(data: string): ChatChunk[] {
    const frame = readAnswer(GeminiResponse, streamFrame(data, this.provider), this.provider);
    if (frame.error) throw new ApiError('upstream_error', `${this.provider} failed in the middle of the stream: ${[frame.error.status, frame.error.message].filter(Boolean).join(': ')}`);
    if (frame.usageMetadata) this.usage = frame.usageMetadata;
    if (this.finishReason !== undefined) return [];
    const chunks: ChatChunk[] = [];
    if (this.id === '') {
      this.id = frame.responseId ?? callId();
      this.model = frame.modelVersion ?? this.model;
      chunks.push(this.chunk({ role: 'assistant', content: '' }));
    }
    const candidate = frame.candidates?.[0];
    const { text, calls } = readParts(candidate?.content?.parts ?? []);
    if (text.length > 0 && text.join('') !== '') chunks.push(this.chunk({ content: text.join('') }));
    for (const call of calls) chunks.push(this.chunk({ tool_calls: [{ index: this.toolCalls++, id: call.id, type: 'function', function: call.function }] }));
    const blocked = !candidate && frame.promptFeedback?.blockReason !== undefined;
    if (candidate?.finishReason !== undefined || blocked) {
      this.finishReason = blocked ? 'content_filter' : finishOf(candidate!.finishReason, this.toolCalls > 0);
      chunks.push(this.chunk({}, this.finishReason));
    }
    return chunks;
  }

  end(): ChatChunk[] {
    if (this.finishReason === undefined) throw new ApiError('upstream_error', `${this.provider} ended the stream without a finish reason`);
    return [{ id: this.id, object: 'chat.completion.chunk', created: this.created, model: this.model, choices: [], usage: usageOf(this.usage) }];
  }
}
