/**
 * An upstream that refuses a key often echoes it, whole or in part, in its error text; the
 * adapters' errors go on into task records, routing attempts, logs and answers. Every adapter
 * object a registry hands out is wrapped so its errors carry no part of its channel's key.
 */
import { scrubSecrets } from '../config/secret-box.ts';

/**
 * Sets an error's text field to its scrubbed text, when that differs, as an own property: some
 * errors have only a getter for it (a DOMException's message, as an aborted request rejects with),
 * and assigning would throw a TypeError in place of the error. False when the error refuses it
 * (frozen).
 */
function scrubField(error: Error, field: 'message' | 'stack' | 'originalMessage', secrets: readonly string[]): boolean {
  const text = (error as unknown as Record<string, unknown>)[field];
  if (typeof text !== 'string') return true;
  const scrubbed = scrubSecrets(text, secrets);
  if (scrubbed === text) return true;
  // An own field keeps its attributes (an adapter error's originalMessage is enumerable, and logged).
  return Reflect.defineProperty(error, field, Object.hasOwn(error, field) ? { value: scrubbed } : { value: scrubbed, writable: true, configurable: true, enumerable: false });
}

function scrubError(error: unknown, secrets: readonly string[]): unknown {
  if (!(error instanceof Error)) return error;
  let scrubbed = true;
  for (const field of ['message', 'originalMessage', 'stack'] as const) scrubbed = scrubField(error, field, secrets) && scrubbed;
  if (scrubbed) return error;
  // An error that keeps the key in a field it will not let go of is not passed on: one of its name and scrubbed message is.
  const replacement = new Error(scrubSecrets(error.message, secrets));
  replacement.name = error.name;
  return replacement;
}

function scrubIterable<T>(iterable: AsyncIterable<T>, secrets: readonly string[]): AsyncIterable<T> {
  return {
    [Symbol.asyncIterator]() {
      const inner = iterable[Symbol.asyncIterator]();
      return {
        next: (...args) => inner.next(...args).catch((err: unknown) => Promise.reject(scrubError(err, secrets))),
        return: inner.return ? (value) => inner.return!(value) : undefined,
      } as AsyncIterator<T>;
    },
  };
}

function scrubResult(value: unknown, secrets: readonly string[]): unknown {
  if (value instanceof Promise) return value.then((v) => scrubResult(v, secrets), (err: unknown) => Promise.reject(scrubError(err, secrets)));
  if (value !== null && typeof value === 'object' && Symbol.asyncIterator in value && !(Symbol.iterator in value)) return scrubIterable(value as AsyncIterable<unknown>, secrets);
  return value;
}

/** The adapter object with every method's errors (thrown, rejected, or from a returned stream) scrubbed of the key. */
export function scrubbingErrors<T extends object>(target: T, key: string | undefined): T {
  if (key === undefined || key.length === 0) return target;
  const secrets = [key];
  return new Proxy(target, {
    get(object, property) {
      // Read on the target itself: getters reading private fields fail on a proxy.
      const value = Reflect.get(object, property) as unknown;
      if (typeof value !== 'function') return value;
      return (...args: unknown[]) => {
        try {
          return scrubResult((value as (...a: unknown[]) => unknown).apply(object, args), secrets);
        } catch (err) {
          throw scrubError(err, secrets);
        }
      };
    },
  });
}
