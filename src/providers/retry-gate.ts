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

const gates = new WeakMap<AbortSignal, RetryGate>();

/** A signal that follows `signal` (aborted when it is, with its reason) and carries `gate`. */
export function gatedSignal(signal: AbortSignal | undefined, gate: RetryGate): AbortSignal {
  const gated = AbortSignal.any(signal ? [signal] : []);
  gates.set(gated, gate);
  return gated;
}

/** Whether a request sent with `signal` that failed with `error` may be sent again: its gate decides, when it has one. */
export function mayRetry(signal: AbortSignal | undefined, error: Error): boolean {
  const gate = signal && gates.get(signal);
  return gate ? gate.again(error) : true;
}
