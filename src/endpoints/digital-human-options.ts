import type { LiveModel } from '../catalog/catalog.ts';
import { ApiError } from '../core/errors.ts';
import type { DigitalHumanGenerationInput } from './digital-human.ts';

/** The two lip-sync modes: some options exist in one mode only. */
export type DigitalHumanMode = 'lite' | 'basic';

/** Upstream model names (catalog defaultRealModelName) of each mode. */
const MODE_BY_REAL_MODEL: Record<string, DigitalHumanMode> = {
  realman_change_lips: 'lite',
  realman_change_lips_basic_chimera: 'basic',
};

/** Options that only one mode has. */
const MODE_ONLY: Record<string, DigitalHumanMode> = {
  templ_start_seconds: 'lite',
  align_audio: 'lite',
  align_audio_reverse: 'lite',
  open_scenedet: 'basic',
};

const MODE_NAMES: Record<DigitalHumanMode, string> = { lite: 'Lite', basic: 'Basic' };

/** The mode of a digital-human model; an operator's model with another upstream name is Basic when its name says so. */
export function digitalHumanModeOf(model: LiveModel): DigitalHumanMode {
  return MODE_BY_REAL_MODEL[model.defaultRealModelName] ?? (/basic/i.test(model.defaultRealModelName) ? 'basic' : 'lite');
}

/** The request's options: the body without `model`. */
type DigitalHumanGenerationParams = Omit<DigitalHumanGenerationInput, 'resource'>;

/**
 * The task input of a generation in `mode`, but for the resource the service adds: an option of the other mode is 400
 * unsupported_parameter; the mode's defaults are filled in (Lite: start 0 s, align_audio on).
 */
export function generationInputFor(mode: DigitalHumanMode, params: DigitalHumanGenerationParams): DigitalHumanGenerationParams {
  for (const [field, only] of Object.entries(MODE_ONLY)) {
    if (params[field as keyof DigitalHumanGenerationParams] !== undefined && only !== mode) {
      throw new ApiError('unsupported_parameter', `${field} is a ${MODE_NAMES[only]} mode option; this model runs in ${MODE_NAMES[mode]} mode`, field);
    }
  }
  const input: DigitalHumanGenerationParams = { ...params, separate_vocal: params.separate_vocal ?? false };
  if (mode === 'basic') return { ...input, open_scenedet: params.open_scenedet ?? false };
  const alignAudio = params.align_audio ?? true;
  if (params.align_audio_reverse === true && !alignAudio) {
    throw new ApiError('invalid_parameter', 'align_audio_reverse needs align_audio on', 'align_audio_reverse');
  }
  return { ...input, templ_start_seconds: params.templ_start_seconds ?? 0, align_audio: alignAudio, align_audio_reverse: params.align_audio_reverse ?? false };
}
