import type sharpModule from 'sharp';

/**
 * sharp, loaded on first use: adapters that only sometimes look at images do not keep its
 * native library in every gateway's memory.
 */
export async function loadSharp(): Promise<typeof sharpModule> {
  return (await import('sharp')).default;
}
