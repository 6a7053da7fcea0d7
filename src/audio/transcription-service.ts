/**
 * Transcription (OpenAI's API shape): the model checked against the catalog (speech_to_text, its
 * formats and size limit), the audio transcribed by the model's engine, the answer written in the
 * requested response_format.
 */
import path from 'node:path';
import type { LiveModel } from '../catalog/catalog.ts';
import type { CapabilityName } from '../catalog/schema.ts';
import { ApiError } from '../core/errors.ts';
import type { SyncModelRegistry } from '../providers/registry.ts';
import type { InputFile, Transcription, TranscriptionModel } from '../providers/spec.ts';
import type { TranscriptionFields, TranscriptionFormat } from '../endpoints/audio.ts';

export interface TranscriptionServiceDeps {
  models: SyncModelRegistry<TranscriptionModel>;
  resolveModel(alias: string, capabilities: readonly CapabilityName[]): LiveModel;
}

/** An answer body and its content type. */
export interface RenderedTranscription {
  contentType: string;
  body: string | Record<string, unknown>;
}

/** `00:01:02,500` (SRT) or `00:01:02.500` (VTT). */
function timestamp(seconds: number, separator: ',' | '.'): string {
  const ms = Math.round(seconds * 1000);
  const pad = (n: number, width = 2) => String(n).padStart(width, '0');
  return `${pad(Math.floor(ms / 3_600_000))}:${pad(Math.floor(ms / 60_000) % 60)}:${pad(Math.floor(ms / 1000) % 60)}${separator}${pad(ms % 1000, 3)}`;
}

/** The transcription in OpenAI's response formats. */
export function renderTranscription(result: Transcription, format: TranscriptionFormat): RenderedTranscription {
  const segments = result.segments ?? [];
  switch (format) {
    case 'text':
      return { contentType: 'text/plain; charset=utf-8', body: result.text };
    case 'srt':
      return { contentType: 'text/plain; charset=utf-8', body: segments.map((s, i) => `${i + 1}\n${timestamp(s.start, ',')} --> ${timestamp(s.end, ',')}\n${s.text.trim()}\n`).join('\n') };
    case 'vtt':
      return { contentType: 'text/plain; charset=utf-8', body: ['WEBVTT\n', ...segments.map((s) => `${timestamp(s.start, '.')} --> ${timestamp(s.end, '.')}\n${s.text.trim()}\n`)].join('\n') };
    case 'verbose_json':
      return {
        contentType: 'application/json; charset=utf-8',
        body: {
          task: 'transcribe',
          language: result.language,
          duration: result.duration,
          text: result.text,
          segments: segments.map((s, id) => ({ id, seek: 0, start: s.start, end: s.end, text: s.text, tokens: [], temperature: 0, avg_logprob: 0, compression_ratio: 0, no_speech_prob: 0 })),
          ...(result.channels ? { channels: result.channels } : {}),
          ...(result.usage ? { usage: result.usage } : {}),
        },
      };
    case 'json':
      return { contentType: 'application/json; charset=utf-8', body: { text: result.text, ...(result.usage ? { usage: result.usage } : {}) } };
  }
}

export class TranscriptionService {
  private readonly deps: TranscriptionServiceDeps;

  constructor(deps: TranscriptionServiceDeps) {
    this.deps = deps;
  }

  /** Checks the fields before the file is read, so a wrong model is refused without reading the audio. */
  model(fields: TranscriptionFields): LiveModel {
    if (fields.stream) throw new ApiError('unsupported_parameter', 'streamed transcriptions are not supported', 'stream');
    return this.deps.resolveModel(fields.model, ['speech_to_text']);
  }

  async transcribe(model: LiveModel, fields: TranscriptionFields, file: InputFile, signal: AbortSignal): Promise<RenderedTranscription> {
    const capability = model.capabilities.speech_to_text;
    const extension = path.extname(file.fileName).slice(1).toLowerCase();
    if (extension && capability?.supported_formats?.length && !capability.supported_formats.includes(extension)) {
      throw new ApiError('invalid_parameter', `model ${model.alias} reads ${capability.supported_formats.join(', ')} files, got .${extension}`, 'file');
    }
    const maxMb = capability?.max_file_size_mb;
    if (maxMb !== undefined && file.data.length > maxMb * 1024 * 1024) throw new ApiError('file_too_large', `file is larger than the model's ${maxMb} MB limit`, 'file');
    const result = await this.deps.models.modelFor(model).transcribe({
      model,
      file,
      ...(fields.language !== undefined ? { language: fields.language } : {}),
      ...(fields.prompt !== undefined ? { prompt: fields.prompt } : {}),
      ...(fields.temperature !== undefined ? { temperature: fields.temperature } : {}),
    }, { signal });
    return renderTranscription(result, fields.response_format ?? 'json');
  }
}
