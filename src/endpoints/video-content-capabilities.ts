/**
 * The capability types a model needs for a video request's content; the video service picks
 * a model by them, and a fallback model must have one of them too.
 */
import type { CapabilityName } from '../catalog/schema.ts';
import type { VideoContentItem } from './video.ts';

/** The capability types that can render `content`, the most fitting first. */
export function capabilitiesForContent(content: readonly VideoContentItem[]): readonly CapabilityName[] {
  // Video references, edits and subjects are omni-model work; pictures need image-to-video.
  if (content.some((c) => c.type === 'video_url' || c.type === 'element')) return ['omni_video'];
  if (content.some((c) => c.type === 'image_url')) return ['image_to_video', 'omni_video'];
  return ['video_generate', 'omni_video'];
}
