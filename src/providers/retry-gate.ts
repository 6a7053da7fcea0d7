/**
 * The tries of one routed call as the transports see them. Routing owns the count (up to
 * routing.max_attempts in all, src/routing/router.ts) and ties a gate to the signal it hands each
 * attempt; a transport about to send a failed request again (UpstreamClient, ChatTransport) asks
 * the gate of that request's signal. So an upstream's own retries spend the call's budget, and an
 * adapter passes nothing beyond the signal it passes already. A request routing did not start (an
 * embedding, a transcription) has no gate and retries by its provider's policy alone.
 */

import { followingSignal } from '../core/following-signal.ts';

/** Whether a request that failed may be sent again on the channel it went to. */
export interface RetryGate {
  /** A yes spends one of the call's tries; a no leaves the call to another channel, or ends it. */
  again(error: Error): boolean;
}

/**
 * The gate of the attempt a signal is lent to, kept on the signal itself. Not in a module-wide
 * Map: entries that came and went with each call kept every call's routing state (the gate's
 * closure reaches it) alive through young-generation collections, and at 8 connections 1.2 KB per
 * call went to the old generation (V8's GC trace); with the gate on the signal, 0.2 KB.
 */
const GATE = Symbol('retry gate');

/** A signal as this module sees it: the gate it is lent to, while an attempt holds it. */
type GateCarrier = AbortSignal & { [GATE]?: RetryGate | undefined };

/** The signal an attempt's requests go with, and the end of its gate. */
export interface GatedSignal {
  signal: AbortSignal;
  /** The attempt is over (its stream too, when it has one): the signal carries the gate no more. */
  release(): void;
}

/**
 * The signal for one attempt: aborted when `signal` is (with its reason), and carrying `gate`
 * until released. Usually `signal` itself, lent to the attempt while it lasts: a new
 * AbortController per call costs more than the rest of routing, and on Node 20 every AbortSignal
 * outlives the young generation (its properties are set after a prototype change), taking what it
 * references to the old one. A signal another attempt holds already (calls routed at once under one
 * signal), or none, gets a controller of its own, which follows `signal` until released.
 */
export function gatedSignal(signal: AbortSignal | undefined, gate: RetryGate): GatedSignal {
  const lent = signal as GateCarrier | undefined;
  if (lent && !lent[GATE]) {
    lent[GATE] = gate;
    return {
      signal: lent,
      release: () => {
        // Emptied, not deleted: the signal keeps one shape whether or not an attempt holds it.
        if (lent[GATE] === gate) lent[GATE] = undefined;
      },
    };
  }
  const { controller, stop } = followingSignal(signal);
  const own = controller.signal as GateCarrier;
  own[GATE] = gate;
  return {
    signal: own,
    release: () => {
      own[GATE] = undefined;
      stop();
    },
  };
}

/** Whether a request sent with `signal` that failed with `error` may be sent again: its gate decides, when it has one. */
export function mayRetry(signal: AbortSignal | undefined, error: Error): boolean {
  const gate = (signal as GateCarrier | undefined)?.[GATE];
  return gate ? gate.again(error) : true;
}
