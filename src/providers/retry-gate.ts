/**
 * The tries of one routed call as the transports see them. Routing owns the count (up to
 * routing.max_attempts in all, src/routing/router.ts) and ties a gate to the signal it hands each
 * attempt; a transport about to send a failed request again (UpstreamClient, ChatTransport) asks
 * the gate of that request's signal. So an upstream's own retries spend the call's budget, and an
 * adapter passes nothing beyond the signal it passes already. A request routing did not start (an
 * embedding, a transcription) has no gate and retries by its provider's policy alone.
 */

/** Whether a request that failed may be sent again on the channel it went to. */
export interface RetryGate {
  /** A yes spends one of the call's tries; a no leaves the call to another channel, or ends it. */
  again(error: Error): boolean;
}

const GATE = Symbol('retry gate');

type GatedSignal = AbortSignal & { [GATE]?: RetryGate };

/**
 * A signal that follows `signal` (aborted when it is, with its reason) and carries `gate`. The gate
 * is a property of the signal, not the value of a WeakMap keyed by it, and the signal is a plain
 * controller's, not AbortSignal.any's (weak references and sets): with either, each call's gate and
 * routing state outlived the young generation and went to the old one, to wait for a full collection.
 */
export function gatedSignal(signal: AbortSignal | undefined, gate: RetryGate): AbortSignal {
  const controller = new AbortController();
  if (signal?.aborted) controller.abort(signal.reason);
  else signal?.addEventListener('abort', () => controller.abort(signal.reason), { once: true });
  const gated: GatedSignal = controller.signal;
  gated[GATE] = gate;
  return gated;
}

/** Whether a request sent with `signal` that failed with `error` may be sent again: its gate decides, when it has one. */
export function mayRetry(signal: AbortSignal | undefined, error: Error): boolean {
  const gate = (signal as GatedSignal | undefined)?.[GATE];
  return gate ? gate.again(error) : true;
}
