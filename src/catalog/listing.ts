/**
 * The two model-list shapes: the platform item of GET /v1/models/list
 * and the compatibility item of GET /v1/models.
 */
import { createHash } from 'node:crypto';
import type { LiveModel } from './catalog.ts';
import type { Capabilities, CapabilityName } from './schema.ts';

/** Platform model item (GET /v1/models/list); unset optional fields are omitted. */
export interface PlatformModelItem {
  name: string;
  alias: string;
  description?: string;
  types: CapabilityName[];
  icon_path?: string;
  capabilities: Capabilities;
  provider: string;
  enabled: boolean;
  disabled_reason?: string;
  disabled_until?: string;
}

export interface ModelPermission {
  id: string;
  object: 'model_permission';
  created: number;
  allow_create_engine: boolean;
  allow_sampling: boolean;
  allow_logprobs: boolean;
  allow_search_indices: boolean;
  allow_view: boolean;
  allow_fine_tuning: boolean;
  organization: string;
  group: null;
  is_blocking: boolean;
}

/** Compatibility model item (GET /v1/models). */
export interface CompatModelItem {
  id: string;
  object: 'model';
  created: number;
  owned_by: string;
  permission: ModelPermission[];
  root: string;
  parent: null;
}

export function toPlatformItem(model: LiveModel): PlatformModelItem {
  return {
    name: model.alias,
    alias: model.alias,
    ...(model.description !== undefined ? { description: model.description } : {}),
    types: [...model.modelTypes],
    ...(model.iconPath !== undefined ? { icon_path: model.iconPath } : {}),
    // A copy, so a caller shaping the response cannot alter the loaded catalog.
    capabilities: structuredClone(model.capabilities),
    provider: model.providerCode,
    enabled: model.enabled,
    ...(model.disabled_reason !== undefined ? { disabled_reason: model.disabled_reason } : {}),
    ...(model.disabled_until !== undefined ? { disabled_until: model.disabled_until } : {}),
  };
}

/** A permission id derived from the alias, so it is the same on every call and every instance. */
function permissionId(alias: string): string {
  return `modelperm-${createHash('sha256').update(alias).digest('hex').slice(0, 24)}`;
}

/** `created` is a Unix time in seconds chosen by the caller (e.g. the process start). */
export function toCompatItem(model: LiveModel, created: number): CompatModelItem {
  return {
    id: model.alias,
    object: 'model',
    created,
    owned_by: model.providerCode,
    permission: [
      {
        id: permissionId(model.alias),
        object: 'model_permission',
        created,
        allow_create_engine: false,
        allow_sampling: true,
        allow_logprobs: true,
        allow_search_indices: false,
        allow_view: true,
        allow_fine_tuning: false,
        organization: '*',
        group: null,
        is_blocking: false,
      },
    ],
    root: model.alias,
    parent: null,
  };
}
