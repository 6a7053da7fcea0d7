import { ApiError, UpstreamApiError } from '../core/errors.ts';
import { UpstreamError, type UpstreamClient, type UpstreamRequest, type UpstreamResponse } from './upstream-client.ts';

/**
 * A request of a synchronous call (embeddings, transcription, rerank): the upstream's failure
 * becomes the caller's error at once, as a chat call's does: 429 rate_limited, 400/422
 * invalid_request (the caller can fix its parameters), a timeout upstream_timeout, anything else
 * upstream_error;
 */
export async function syncRequest(client: UpstreamClient, request: UpstreamRequest): Promise<UpstreamResponse> {
  try {
    return await client.request(request);
  } catch (err) {
    if (!(err instanceof UpstreamError)) throw err;
    const what = err.originalMessage && err.originalMessage !== err.message ? `${err.message}: ${err.originalMessage}` : err.message;
    const status = err.status;
    if (status === undefined) throw new ApiError(/timed out/.test(err.message) ? 'upstream_timeout' : 'upstream_error', what);
    if (status === 429) throw new ApiError('rate_limited', what, null, {}, { 'retry-after': '1' });
    // An upstream's refusal: the ledger tells it from the gateway's own (limits/limits-service.ts).
    if (status === 400 || status === 422) throw new UpstreamApiError('invalid_request', what, status);
    throw new ApiError('upstream_error', what);
  }
}

/** The JSON of a synchronous call's answer; anything else is a 502 naming the provider. */
export function syncJson<T>(res: UpstreamResponse, provider: string, call: string): T {
  try {
    return res.json<T>();
  } catch {
    throw new ApiError('upstream_error', `${provider} answered ${call} with a body that is not JSON: ${res.body.toString('utf8').slice(0, 200)}`);
  }
}
