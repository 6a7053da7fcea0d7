import { createHash } from 'node:crypto';
import sharp, { type Sharp } from 'sharp';
import type { ImageSize } from './image-output.ts';
import { colourHuesOf } from './colour-words.ts';

/** A small, fast generator (sfc32) seeded from a hex digest: the same digest gives the same numbers. */
function randomFrom(hexDigest: string): () => number {
  let [a, b, c, d] = [0, 8, 16, 24].map((at) => parseInt(hexDigest.slice(at, at + 8), 16) >>> 0) as [number, number, number, number];
  const next = () => {
    a >>>= 0; b >>>= 0; c >>>= 0; d >>>= 0;
    let t = (a + b) | 0;
    a = b ^ (b >>> 9);
    b = (c + (c << 3)) | 0;
    c = (c << 21) | (c >>> 11);
    d = (d + 1) | 0;
    t = (t + d) | 0;
    c = (c + t) | 0;
    return (t >>> 0) / 4294967296;
  };
  // The first outputs still echo the seed words; mixing them out is the generator's usual start.
  for (let i = 0; i < 12; i++) next();
  return next;
}

/**
 * The prompt's palette. A prompt naming colours ("a red fox on blue snow") is drawn mostly in the
 * first one's hue, with the others as accents; any other prompt gets a hue from its hash, with
 * its neighbours and sometimes its complement.
 */
function paletteOf(prompt: string): (random: () => number) => string {
  const [named, ...accents] = colourHuesOf(prompt);
  const hue = named ?? parseInt(createHash('sha256').update(prompt).digest('hex').slice(0, 8), 16) % 360;
  const nextHue = (random: () => number): number => {
    if (named === undefined) return random() < 0.75 ? hue + (random() - 0.5) * 70 : hue + 180 + (random() - 0.5) * 40;
    if (accents.length > 0 && random() < 0.25) return accents[Math.floor(random() * accents.length)] + (random() - 0.5) * 30;
    return hue + (random() - 0.5) * 50;
  };
  return (random) => {
    const h = nextHue(random);
    return `hsl(${Math.round((h + 360) % 360)},${Math.round(45 + random() * 50)}%,${Math.round(25 + random() * 55)}%)`;
  };
}

/**
 * An SVG picture for a prompt: a gradient and a few shapes in the prompt's colours, laid out
 * from `layoutKey` (model, prompt, seed, index). Positions are fractions of the canvas, so one
 * key draws the same composition at every size.
 */
function pictureSvg(prompt: string, layoutKey: string, { width, height }: ImageSize): string {
  const random = randomFrom(layoutKey);
  const colour = paletteOf(prompt);
  const unit = Math.min(width, height);
  const angle = random() * 360;
  const shapes: string[] = [];
  const count = 6 + Math.floor(random() * 7);
  for (let i = 0; i < count; i++) {
    const x = (random() * width).toFixed(1);
    const y = (random() * height).toFixed(1);
    const size = unit * (0.08 + random() * 0.3);
    const style = `fill="${colour(random)}" fill-opacity="${(0.35 + random() * 0.5).toFixed(2)}"`;
    const kind = Math.floor(random() * 4);
    if (kind === 0) shapes.push(`<circle cx="${x}" cy="${y}" r="${size.toFixed(1)}" ${style}/>`);
    else if (kind === 1) shapes.push(`<ellipse cx="${x}" cy="${y}" rx="${size.toFixed(1)}" ry="${(size * (0.3 + random() * 0.6)).toFixed(1)}" transform="rotate(${Math.round(random() * 180)} ${x} ${y})" ${style}/>`);
    else if (kind === 2) shapes.push(`<rect x="${x}" y="${y}" width="${(size * 1.6).toFixed(1)}" height="${size.toFixed(1)}" transform="rotate(${Math.round(random() * 90)} ${x} ${y})" ${style}/>`);
    else {
      const points = [0, 1, 2].map((k) => {
        const a = random() * Math.PI * 2 + (k * Math.PI * 2) / 3;
        return `${(Number(x) + Math.cos(a) * size).toFixed(1)},${(Number(y) + Math.sin(a) * size).toFixed(1)}`;
      });
      shapes.push(`<polygon points="${points.join(' ')}" ${style}/>`);
    }
  }
  return `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}">`
    + `<defs><linearGradient id="g" gradientTransform="rotate(${angle.toFixed(1)} 0.5 0.5)"><stop offset="0" stop-color="${colour(random)}"/><stop offset="1" stop-color="${colour(random)}"/></linearGradient></defs>`
    + `<rect width="${width}" height="${height}" fill="url(#g)"/>${shapes.join('')}</svg>`;
}

/** The picture as an opaque RGB pipeline of exactly `size`. */
export function drawPicture(prompt: string, layoutKey: string, size: ImageSize): Sharp {
  return sharp(Buffer.from(pictureSvg(prompt, layoutKey, size)), { limitInputPixels: false }).removeAlpha();
}
