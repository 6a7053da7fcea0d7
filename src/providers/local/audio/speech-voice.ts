import { createHash } from 'node:crypto';
import type { Voice } from '../../../catalog/catalog.ts';
import { MESPEAK_VOICES, type MespeakVoice } from './mespeak.ts';

/** How the local engine renders a catalog voice with eSpeak. */
export interface LocalVoice {
  voice: MespeakVoice;
  variant: string;
  /** eSpeak pitch, 0–99 (50 is eSpeak's default). */
  pitch: number;
}

const MALE_VARIANTS = ['m1', 'm2', 'm3', 'm4', 'm5', 'm6', 'm7'];
const FEMALE_VARIANTS = ['f1', 'f2', 'f3', 'f4', 'f5'];
const NEUTRAL_VARIANTS = ['klatt', 'klatt2', 'klatt3'];

/** Catalog `lang` values that do not name a mespeak voice directly. */
const LANGUAGE_VOICES: Record<string, MespeakVoice> = {
  en: 'en/en-us',
  'en-us': 'en/en-us',
  'en-gb': 'en/en-rp',
  yue: 'zh-yue',
  'zh-hk': 'zh-yue',
  cmn: 'zh',
};

const CJK = /[\u3400-\u9fff]/;

/** The mespeak voice for a language tag such as `en`, `zh`, `pt-BR`; undefined when none fits. */
function voiceForLanguage(lang: string | undefined): MespeakVoice | undefined {
  if (!lang) return undefined;
  const tag = lang.trim().toLowerCase().replace('_', '-');
  const primary = tag.split('-')[0]!;
  const known = (v: string): v is MespeakVoice => (MESPEAK_VOICES as readonly string[]).includes(v);
  return LANGUAGE_VOICES[tag] ?? (known(tag) ? tag : undefined) ?? LANGUAGE_VOICES[primary] ?? (known(primary) ? primary : undefined);
}

/** The language voice for text in no declared language: Chinese when it has CJK characters, else English. */
export function voiceForText(text: string): MespeakVoice {
  return CJK.test(text) ? 'zh' : 'en/en-us';
}

/**
 * Maps a voice id deterministically to an eSpeak voice: the language from the catalog voice's
 * `lang` (else from the text), a variant and base pitch from its `gender` (male lower, female
 * higher, anything else a synthetic Klatt voice), the exact variant and pitch picked by a hash
 * of the id so that different voices of one gender sound different.
 */
export function localVoiceFor(voiceId: string, entry: Voice | undefined, text: string): LocalVoice {
  const digest = createHash('sha256').update(voiceId).digest();
  const gender = (entry?.gender ?? ['male', 'female'][digest[0]! % 2])!.toLowerCase();
  const [variants, basePitch] = gender === 'male' ? [MALE_VARIANTS, 35] : gender === 'female' ? [FEMALE_VARIANTS, 65] : [NEUTRAL_VARIANTS, 50];
  return {
    voice: voiceForLanguage(entry?.lang) ?? voiceForText(text),
    variant: variants[digest[1]! % variants.length]!,
    pitch: basePitch + (digest[2]! % 11) - 5,
  };
}
