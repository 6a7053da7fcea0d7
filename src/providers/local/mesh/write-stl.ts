import { BufferAttribute, BufferGeometry, Mesh, Scene } from 'three';
import { STLExporter } from 'three/examples/jsm/exporters/STLExporter.js';
import type { WorldPart } from './mesh-common.ts';

/** Binary STL of all parts (triangles only, no colour or texture), through three's exporter. */
export function writeStl(parts: WorldPart[]): Buffer {
  const scene = new Scene();
  for (const part of parts) {
    const geometry = new BufferGeometry();
    geometry.setAttribute('position', new BufferAttribute(part.arrays.positions, 3));
    geometry.setIndex(new BufferAttribute(part.arrays.indices, 1));
    scene.add(new Mesh(geometry));
  }
  scene.updateMatrixWorld(true);
  const view = new STLExporter().parse(scene, { binary: true }) as DataView;
  return Buffer.from(view.buffer, view.byteOffset, view.byteLength);
}
