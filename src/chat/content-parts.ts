/**
 * Content parts of chat messages (rules 1–3): the tolerated spellings
 * normalised, base64 media uploaded to the file store and replaced by its URL, and media the
 * model cannot read turned into a plain-text link.
 */
import mime from 'mime-types';
import type { LiveModel } from '../catalog/catalog.ts';
import { languageCapabilityOf } from '../catalog/capabilities.ts';
import { ApiError } from '../core/errors.ts';
import type { OutboundUrlPolicy } from '../core/outbound-urls.ts';
import { guessMimeType } from '../core/mime-type.ts';
import type { ChatContentPart, ChatMessage } from '../providers/spec.ts';
import type { ChatInputMessage, ChatInputPart } from '../core/chat-input.ts';

/** Which media a model reads natively; the rest reaches it as links in text. */
export interface MediaSupport {
  image: boolean;
  video: boolean;
  audio: boolean;
  file: boolean;
}

/** Stores bytes for the caller and answers their public URL. */
export type Upload = (data: Buffer, fileName: string, mimeType: string) => Promise<string>;

export interface NormaliseContext {
  support: MediaSupport;
  upload: Upload;
  /** Media URLs reach models that fetch them: the same URLs are refused as the gateway would not fetch itself. */
  urls: OutboundUrlPolicy;
  /** Largest decoded base64 file (the upload limit). */
  maxBytes: number;
}

/**
 * The catalog value that declares native file input: `file_input` among the model's language
 * capability's supportedApiProtocols. Without it files are always given as links.
 */
export const FILE_INPUT_PROTOCOL = 'file_input';

const supportCache = new WeakMap<LiveModel, MediaSupport>();

/** What the model reads, from its catalog types: image_analysis, video_understanding, audio_understanding, or omni for all three. */
export function mediaSupportOf(model: LiveModel): MediaSupport {
  let support = supportCache.get(model);
  if (!support) {
    const types: readonly string[] = model.modelTypes;
    const omni = types.includes('omni');
    const language = languageCapabilityOf(model);
    support = {
      image: omni || types.includes('image_analysis'),
      video: omni || types.includes('video_understanding'),
      audio: omni || types.includes('audio_understanding'),
      file: language?.supportedApiProtocols?.includes(FILE_INPUT_PROTOCOL) ?? false,
    };
    supportCache.set(model, support);
  }
  return support;
}

const DATA_URI = /^data:([\w.+-]+\/[\w.+-]+)?(?:;[^,;]*)*;base64,/i;
const BASE64 = /^[A-Za-z0-9+/_-]*={0,2}$/;
const REMOTE_URL = /^https?:\/\//i;

/** Decodes base64 or a base64 data URI; 400 naming the field when it is neither, 413 past the limit. */
function decode(value: string, param: string, maxBytes: number): { bytes: Buffer; mimeType?: string } {
  let text = value;
  let mimeType: string | undefined;
  const uri = DATA_URI.exec(text);
  if (uri) {
    mimeType = uri[1]?.toLowerCase();
    text = text.slice(uri[0].length);
  } else if (text.startsWith('data:')) {
    throw new ApiError('invalid_parameter', `${param}: malformed data URI (expected data:<type>;base64,<data>)`, param);
  }
  if (/\s/.test(text)) text = text.replace(/\s+/g, '');
  if (text === '' || !BASE64.test(text)) throw new ApiError('invalid_parameter', `${param} must be base64 data or a base64 data URI`, param);
  // Checked before decoding, so an oversized value is refused without a second copy of it.
  if (Math.floor((text.length * 3) / 4) - 2 > maxBytes) throw new ApiError('file_too_large', `${param} is larger than the ${+(maxBytes / 1024 / 1024).toFixed(2)} MB file limit`, param);
  return { bytes: Buffer.from(text, 'base64'), mimeType };
}

/** `<stem>.<extension of the type>`, or the stem alone for unknown types. */
function nameFor(stem: string, mimeType: string): string {
  const ext = mime.extension(mimeType);
  return ext && mimeType !== 'application/octet-stream' ? `${stem}.${ext}` : stem;
}

/** The type of raw base64 audio from its `format` (wav, mp3, …); wav when none is given, as OpenAI assumes. */
function audioMimeType(format: string | undefined): string {
  return format ? mime.lookup(format) || `audio/${format}` : 'audio/wav';
}

async function normalisePart(part: ChatInputPart, param: string, ctx: NormaliseContext): Promise<ChatContentPart[]> {
  switch (part.type) {
    case 'text':
      return [{ type: 'text', text: part.text! }];
    case 'image_url': {
      const { url, urls, detail } = part.image_url!;
      const list = url !== undefined ? [url] : typeof urls === 'string' ? [urls] : urls;
      if (!list?.length) throw new ApiError('missing_parameter', `${param}.image_url.url is required`, `${param}.image_url.url`);
      return Promise.all(list.map(async (each, k) => {
        ctx.urls.checkCallerUrl(each, url !== undefined ? `${param}.image_url.url` : Array.isArray(urls) ? `${param}.image_url.urls[${k}]` : `${param}.image_url.urls`);
        let ref = each;
        // An inline image the model cannot see becomes a link, so the data goes to the store first.
        if (!ctx.support.image && ref.startsWith('data:')) {
          const { bytes, mimeType = guessMimeType(undefined, bytes.subarray(0, 16)) } = decode(ref, `${param}.image_url.url`, ctx.maxBytes);
          ref = await ctx.upload(bytes, nameFor('image', mimeType), mimeType);
        }
        return { type: 'image_url', image_url: detail === undefined ? { url: ref } : { url: ref, detail } } satisfies ChatContentPart;
      }));
    }
    case 'video_url': {
      let { url } = part.video_url!;
      ctx.urls.checkCallerUrl(url, `${param}.video_url.url`);
      if (url.startsWith('data:')) {
        const { bytes, mimeType = 'video/mp4' } = decode(url, `${param}.video_url.url`, ctx.maxBytes);
        url = await ctx.upload(bytes, nameFor('video', mimeType), mimeType);
      }
      return [{ type: 'video_url', video_url: { url } }];
    }
    case 'input_audio': {
      const { url, data, format } = part.input_audio!;
      const withFormat = (ref: string): ChatContentPart => ({ type: 'input_audio', input_audio: format === undefined ? { url: ref } : { url: ref, format } });
      if (url !== undefined) {
        ctx.urls.checkCallerUrl(url, `${param}.input_audio.url`);
        return [withFormat(url)];
      }
      if (data === undefined) throw new ApiError('missing_parameter', `${param}.input_audio needs url or data`, `${param}.input_audio.url`);
      if (REMOTE_URL.test(data)) {
        ctx.urls.checkCallerUrl(data, `${param}.input_audio.data`);
        return [withFormat(data)];
      }
      const decoded = decode(data, `${param}.input_audio.data`, ctx.maxBytes);
      const mimeType = decoded.mimeType ?? audioMimeType(format);
      return [withFormat(await ctx.upload(decoded.bytes, nameFor('audio', mimeType), mimeType))];
    }
    case 'audio_url':
      ctx.urls.checkCallerUrl(part.audio_url!.url, `${param}.audio_url.url`);
      return [{ type: 'audio_url', audio_url: { url: part.audio_url!.url } }];
    case 'file_url': {
      const { url, file_name: fileName = part.file_url!.fileName } = part.file_url!;
      ctx.urls.checkCallerUrl(url, `${param}.file_url.url`);
      return [{ type: 'file_url', file_url: fileName === undefined ? { url } : { url, file_name: fileName } }];
    }
    case 'file': {
      const { file_data: data, filename, file_id: fileId } = part.file!;
      if (data === undefined) {
        if (fileId !== undefined) throw new ApiError('unsupported_parameter', `${param}.file.file_id is not supported: send file_data or a file_url part`, `${param}.file.file_id`);
        throw new ApiError('missing_parameter', `${param}.file.file_data is required`, `${param}.file.file_data`);
      }
      const decoded = decode(data, `${param}.file.file_data`, ctx.maxBytes);
      const mimeType = decoded.mimeType ?? guessMimeType(filename, decoded.bytes.subarray(0, 16));
      const fileName = filename || nameFor('file', mimeType);
      return [{ type: 'file_url', file_url: { url: await ctx.upload(decoded.bytes, fileName, mimeType), file_name: fileName } }];
    }
  }
}

/**
 * Messages as a client sent them → as stored and handed on: `image_url.urls` become `url`s, base64
 * audio, files and video are uploaded for the caller and replaced by their URLs (uploads run
 * concurrently), `file` parts become `file_url` parts. String contents pass untouched.
 */
export async function normaliseMessages(messages: ChatInputMessage[], ctx: NormaliseContext): Promise<ChatMessage[]> {
  const out = new Array<ChatMessage>(messages.length);
  const pending: Promise<void>[] = [];
  for (let i = 0; i < messages.length; i++) {
    const message = messages[i];
    const { content } = message;
    if (!Array.isArray(content)) {
      out[i] = content === undefined ? { ...message, content: null } : (message as ChatMessage);
      continue;
    }
    pending.push(Promise.all(content.map((part, j) => normalisePart(part, `messages[${i}].content[${j}]`, ctx))).then((parts) => {
      out[i] = { ...message, content: parts.flat() };
    }));
  }
  if (pending.length > 0) await Promise.all(pending);
  return out;
}

/** The link a model without the matching capability reads instead of the media. */
function asLink(part: ChatContentPart, support: MediaSupport): ChatContentPart {
  switch (part.type) {
    case 'image_url':
      if (support.image) return part;
      return { type: 'text', text: `[image: ${part.image_url.url.startsWith('data:') ? 'inline image data' : part.image_url.url}]` };
    case 'video_url':
      return support.video ? part : { type: 'text', text: `[video: ${part.video_url.url}]` };
    case 'input_audio':
      return support.audio ? part : { type: 'text', text: `[audio: ${part.input_audio.url}]` };
    case 'audio_url':
      return support.audio ? part : { type: 'text', text: `[audio: ${part.audio_url.url}]` };
    case 'file_url':
      return support.file ? part : { type: 'text', text: `[file: ${part.file_url.url}]` };
    default:
      return part;
  }
}

/** The messages as this model reads them: media it lacks the capability for become text links (spec rule 3). */
export function adaptMessages(messages: ChatMessage[], support: MediaSupport): ChatMessage[] {
  let out: ChatMessage[] | undefined;
  for (let i = 0; i < messages.length; i++) {
    const { content } = messages[i];
    if (!Array.isArray(content)) continue;
    let parts: ChatContentPart[] | undefined;
    for (let j = 0; j < content.length; j++) {
      const adapted = asLink(content[j], support);
      if (adapted !== content[j]) (parts ??= content.slice())[j] = adapted;
    }
    if (parts) (out ??= messages.slice())[i] = { ...messages[i], content: parts };
  }
  return out ?? messages;
}
