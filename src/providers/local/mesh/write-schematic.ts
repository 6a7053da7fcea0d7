import { gzipSync } from 'node:zlib';
import { nearestColor, type Vec3 } from './mesh-common.ts';
import type { VoxelGrid } from './voxelize.ts';

/** Block states named in a schematic's palette, with the colour each stands for. */
const BLOCK_PALETTE: { name: string; color: [number, number, number] }[] = [
  ['white', [0.81, 0.84, 0.84]], ['orange', [0.88, 0.38, 0.0]], ['magenta', [0.66, 0.19, 0.62]], ['light_blue', [0.14, 0.54, 0.78]],
  ['yellow', [0.94, 0.69, 0.08]], ['lime', [0.37, 0.66, 0.09]], ['pink', [0.84, 0.4, 0.56]], ['gray', [0.21, 0.22, 0.25]],
  ['light_gray', [0.49, 0.49, 0.45]], ['cyan', [0.08, 0.47, 0.53]], ['purple', [0.39, 0.13, 0.61]], ['blue', [0.18, 0.18, 0.56]],
  ['brown', [0.38, 0.24, 0.12]], ['green', [0.29, 0.36, 0.14]], ['red', [0.56, 0.13, 0.13]], ['black', [0.03, 0.04, 0.06]],
].map(([color, rgb]) => ({ name: `minecraft:${color}_concrete`, color: rgb as [number, number, number] }));

/** The colours of BLOCK_PALETTE, in its order. */
export const BLOCK_COLORS: Vec3[] = BLOCK_PALETTE.map((b) => b.color);

/**
 * A Sponge schematic (version 2, gzipped NBT) of the grid's filled cells as concrete blocks
 * (the nearest palette colour); X is width, Y height, Z length, as in the block game.
 */
export function writeSchematic(grid: VoxelGrid): { data: Buffer; blocks: number; palette: string[] } {
  const [width, height, length] = grid.size;
  const used = new Map<number, number>();
  const blockData: number[] = [];
  let blocks = 0;
  for (let y = 0; y < height; y++) {
    for (let z = 0; z < length; z++) {
      for (let x = 0; x < width; x++) {
        const cell = x + y * width + z * width * height;
        let id = 0;
        if (grid.filled[cell]) {
          const block = nearestColor(BLOCK_COLORS, grid.colors[cell * 3]!, grid.colors[cell * 3 + 1]!, grid.colors[cell * 3 + 2]!);
          if (!used.has(block)) used.set(block, used.size + 1);
          id = used.get(block)!;
          blocks++;
        }
        // Block data is a run of varints in x, then z, then y order.
        for (let v = id; ; v >>>= 7) {
          if (v < 0x80) {
            blockData.push(v);
            break;
          }
          blockData.push((v & 0x7f) | 0x80);
        }
      }
    }
  }
  const palette = ['minecraft:air', ...[...used.keys()].map((b) => BLOCK_PALETTE[b]!.name)];
  const nbt = new NbtWriter();
  nbt.compound('Schematic', () => {
    nbt.int('Version', 2);
    nbt.int('DataVersion', 3465);
    nbt.short('Width', width);
    nbt.short('Height', height);
    nbt.short('Length', length);
    nbt.intArray('Offset', [0, 0, 0]);
    nbt.int('PaletteMax', palette.length);
    nbt.compound('Palette', () => palette.forEach((name, i) => nbt.int(name, i)));
    nbt.byteArray('BlockData', blockData);
    nbt.emptyList('BlockEntities', 10);
  });
  return { data: gzipSync(nbt.bytes()), blocks, palette };
}

/** Named binary tags, big-endian, as the block game stores them. */
class NbtWriter {
  private readonly chunks: Buffer[] = [];

  private header(type: number, name: string): void {
    const text = Buffer.from(name, 'utf8');
    const head = Buffer.alloc(3);
    head.writeUInt8(type, 0);
    head.writeUInt16BE(text.length, 1);
    this.chunks.push(head, text);
  }

  compound(name: string, body: () => void): void {
    this.header(10, name);
    body();
    this.chunks.push(Buffer.from([0]));
  }

  int(name: string, value: number): void {
    this.header(3, name);
    const b = Buffer.alloc(4);
    b.writeInt32BE(value, 0);
    this.chunks.push(b);
  }

  short(name: string, value: number): void {
    this.header(2, name);
    const b = Buffer.alloc(2);
    b.writeInt16BE(value, 0);
    this.chunks.push(b);
  }

  intArray(name: string, values: number[]): void {
    this.header(11, name);
    const b = Buffer.alloc(4 + values.length * 4);
    b.writeInt32BE(values.length, 0);
    values.forEach((v, i) => b.writeInt32BE(v, 4 + i * 4));
    this.chunks.push(b);
  }

  byteArray(name: string, values: number[]): void {
    this.header(7, name);
    const b = Buffer.alloc(4 + values.length);
    b.writeInt32BE(values.length, 0);
    Buffer.from(values).copy(b, 4);
    this.chunks.push(b);
  }

  emptyList(name: string, elementType: number): void {
    this.header(9, name);
    this.chunks.push(Buffer.from([elementType, 0, 0, 0, 0]));
  }

  bytes(): Buffer {
    return Buffer.concat(this.chunks);
  }
}
