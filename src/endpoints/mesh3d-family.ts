/**
 * The 3D model family of a catalog model, read from its providerCode and defaultRealModelName
 * so any catalog file drives the same rules as the built-in one.
 */

/** Rule sets of the 3D model families; `generic` is a model no row describes (capabilities only). */
export type FamilyKey = 'A-pro-3.0' | 'A-pro-3.1' | 'A-fast' | 'B-2' | 'B-2.5' | 'C-H' | 'C-P1' | 'C-legacy' | 'D-3.1' | 'D-P1' | 'generic';

export type RodinTier = 'extra-low' | 'low' | 'medium' | 'high' | 'extra-high';

export interface Mesh3dFamily {
  key: FamilyKey;
  /** The family letter; undefined for `generic`. */
  letter?: 'A' | 'B' | 'C' | 'D';
  /** Major.minor version where the family has one (A 3.0, C legacy 1.0, B 2.5); P1 has none. */
  version?: number;
  /** B quality tier. */
  tier?: RodinTier;
}

export interface VersionedModel {
  providerCode: string;
  defaultRealModelName: string;
}

const RODIN = /^Gen-(2(?:\.5)?)\/(extra-low|low|medium|high|extra-high)$/i;
const TRIPO_VERSION = /^(?:Turbo-)?v(\d+\.\d+)-/i;

export function familyOf(model: VersionedModel): Mesh3dFamily {
  const name = model.defaultRealModelName;
  switch (model.providerCode) {
    case 'hunyuan': {
      const pro = /^hunyuan3d-pro-(\d+\.\d+)$/i.exec(name);
      if (pro) return { key: Number(pro[1]) >= 3.1 ? 'A-pro-3.1' : 'A-pro-3.0', letter: 'A', version: Number(pro[1]) };
      const rapid = /^hunyuan3d-rapid-(\d+\.\d+)$/i.exec(name);
      if (rapid) return { key: 'A-fast', letter: 'A', version: Number(rapid[1]) };
      break;
    }
    case 'rodin': {
      const m = RODIN.exec(name);
      if (m) return { key: m[1] === '2.5' ? 'B-2.5' : 'B-2', letter: 'B', version: Number(m[1]), tier: m[2]!.toLowerCase() as RodinTier };
      break;
    }
    case 'tripo': {
      if (/^P1-/i.test(name)) return { key: 'C-P1', letter: 'C' };
      const m = TRIPO_VERSION.exec(name);
      if (m) {
        const version = Number(m[1]);
        return { key: version >= 3 ? 'C-H' : 'C-legacy', letter: 'C', version };
      }
      break;
    }
    case 'fal': {
      if (/^tripo3d\/v3\.1$/i.test(name)) return { key: 'D-3.1', letter: 'D', version: 3.1 };
      if (/^tripo3d\/p1$/i.test(name)) return { key: 'D-P1', letter: 'D' };
      break;
    }
  }
  return { key: 'generic' };
}
