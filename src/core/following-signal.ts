/** A signal that follows another until told to stop. */
export interface FollowingSignal {
  controller: AbortController;
  /** Stops following: the parent no longer references this signal. */
  stop(): void;
}

/**
 * A controller whose signal aborts when `parent` does, with its reason, until `stop`. Not
 * AbortSignal.any: on Node 20 it leaves a reference to each combined signal on its sources for as
 * long as they live, and a parent may live long (a client's connection, http/client-gone.ts).
 */
export function followingSignal(parent: AbortSignal | undefined): FollowingSignal {
  const controller = new AbortController();
  if (!parent) return { controller, stop: () => undefined };
  if (parent.aborted) {
    controller.abort(parent.reason);
    return { controller, stop: () => undefined };
  }
  const follow = () => controller.abort(parent.reason);
  parent.addEventListener('abort', follow, { once: true });
  return { controller, stop: () => parent.removeEventListener('abort', follow) };
}
