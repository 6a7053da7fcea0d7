import type { GenerationOutput } from '../../spec.ts';

/** Output arguments of every local-engine video: H.264 in yuv420p, playable everywhere, index first for streaming. */
export const H264_MP4_ARGS = ['-c:v', 'libx264', '-preset', 'veryfast', '-crf', '23', '-pix_fmt', 'yuv420p', '-movflags', '+faststart'] as const;

/** Output arguments of an AAC audio track. */
export const AAC_ARGS = ['-c:a', 'aac', '-b:a', '128k', '-ar', '44100'] as const;

/** What a local-engine video is stored as. */
export const MP4_MIME_TYPE = 'video/mp4';

/** The output of a task that made one local-engine MP4, named after the task. */
export function mp4Output(taskId: string, data: Buffer, size: { width: number; height: number }, hasAudio: boolean): GenerationOutput {
  return {
    files: [{
      type: 'video',
      data,
      fileName: `${taskId}.mp4`,
      mimeType: MP4_MIME_TYPE,
      mediaSize: { type: 'video', width: size.width, height: size.height, status: 1 },
      hasAudio,
    }],
  };
}

/** `n` rounded to the nearest even number, at least 2: H.264 in yuv420p needs even sides. */
export function even(n: number): number {
  return Math.max(2, Math.round(n / 2) * 2);
}
