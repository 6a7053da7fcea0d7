import type { ServedRoute } from '../providers/spec.ts';

/** The headers naming who served a chat or agent answer. */
export function routeHeaders(route: ServedRoute): Record<string, string> {
  return { 'x-gengate-model': route.model, 'x-gengate-provider': route.provider, 'x-gengate-channel': route.channel };
}
