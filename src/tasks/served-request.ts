/**
 * Reads an adapter's declaration (providers/spec.ts EngineDeclaration) at submit: an endpoint it
 * does not serve and a field it refuses are 400s before any task exists; fields it does not read
 * become the task's warnings, so the caller learns what was not passed on.
 */
import type { LiveModel } from '../catalog/catalog.ts';
import { ApiError } from '../core/errors.ts';
import type { Endpoint, EndpointDeclaration, EngineDeclaration } from '../providers/spec.ts';

/** Fields the gateway itself reads from every input: never passed on, never warned about. */
const GATEWAY_FIELDS = new Set(['_metadata', 'options']);

/**
 * The declaration of `endpoint`, undefined when the adapter declares nothing; 400
 * model_capability_mismatch when it declares endpoints and not this one.
 */
export function servedDeclaration(serves: EngineDeclaration | undefined, model: LiveModel, endpoint: Endpoint): EndpointDeclaration | undefined {
  if (!serves) return undefined;
  const declared = serves[endpoint];
  if (!declared) {
    const endpoints = Object.keys(serves).join(', ');
    throw new ApiError('model_capability_mismatch', `model ${model.alias} runs on provider ${model.providerCode}, whose adapter does not serve ${endpoint} (it serves ${endpoints})`, 'model');
  }
  return declared;
}

/** Refuses a field the declaration refuses; answers a warning for each field it does not read. */
export function servedWarnings(declared: EndpointDeclaration | undefined, model: LiveModel, input: object): string[] {
  if (!declared) return [];
  const given = Object.entries(input).filter(([field, value]) => value !== undefined && !GATEWAY_FIELDS.has(field)).map(([field]) => field);
  const refused = given.find((field) => declared.refused?.includes(field));
  if (refused !== undefined) throw new ApiError('unsupported_parameter', `model ${model.alias} (provider ${model.providerCode}) does not support ${refused}; omit it`, refused);
  const read = declared.fields;
  return read ? given.filter((field) => !read.includes(field)).map((field) => `${field} was not passed on: provider ${model.providerCode} does not take it`) : [];
}
