import { even } from './mp4-encoding.ts';

/** The short side of each output resolution. */
const SHORT_SIDE: Record<string, number> = { '480p': 480, '720p': 720, '1080p': 1080, '1440p': 1440, '2160p': 2160 };

/** Width over height of each fixed aspect ratio. */
const RATIOS: Record<string, number> = { '16:9': 16 / 9, '9:16': 9 / 16, '4:3': 4 / 3, '3:4': 3 / 4, '1:1': 1, '21:9': 21 / 9, '9:21': 9 / 21 };

/** Ratios a picture may lend an adaptive video; beyond them the frame would be a sliver. */
const PICTURE_RATIO_RANGE = [9 / 21, 21 / 9] as const;

const DEFAULT_RATIO = 16 / 9;

/**
 * The frame size of a video: the resolution is the short side (720p 16:9 is 1280x720);
 * `adaptive` and `keep_ratio` take the ratio of the given picture (the first frame), else 16:9.
 */
export function videoFrameSize(resolution: string, aspectRatio: string, picture?: { width: number; height: number }): { width: number; height: number } {
  const short = SHORT_SIDE[resolution] ?? SHORT_SIDE['720p']!;
  let ratio = RATIOS[aspectRatio];
  if (ratio === undefined) {
    ratio = picture && picture.width > 0 && picture.height > 0 ? picture.width / picture.height : DEFAULT_RATIO;
    ratio = Math.min(PICTURE_RATIO_RANGE[1], Math.max(PICTURE_RATIO_RANGE[0], ratio));
  }
  return ratio >= 1 ? { width: even(short * ratio), height: even(short) } : { width: even(short), height: even(short / ratio) };
}
