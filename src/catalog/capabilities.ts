/**
 * Queries over a catalog model's capabilities. The types they answer come from the catalog
 * schema (schema.ts), the one description of the catalog file.
 */
import type { BaseModel, LanguageCapabilityFields, Voice } from './schema.ts';

/** The language fields of a chat model: its text_generate capability's, else its omni capability's. */
export function languageCapabilityOf(model: Pick<BaseModel, 'capabilities'>): LanguageCapabilityFields | undefined {
  return model.capabilities.text_generate ?? model.capabilities.omni;
}

/** The voices a text_to_speech model lists in the catalog (none: it takes any voice id). */
export function speechVoicesOf(model: Pick<BaseModel, 'capabilities'>): Voice[] {
  return model.capabilities.text_to_speech?.voices ?? [];
}
