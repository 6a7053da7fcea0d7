/**
 * An upstream that refuses a key often echoes it, whole or in part, in its error text; the
 * adapters' errors go on into task records, routing attempts, logs and answers. Every adapter
 * object a registry hands out is wrapped so its errors carry no part of its channel's key.
 */
import { scrubSecrets } from '../config/secret-box.ts';

function scrubError(error: unknown, secrets: readonly string[]): unknown {
  if (error instanceof Error) {
    error.message = scrubSecrets(error.message, secrets);
    const withOriginal = error as Error & { originalMessage?: string };
    // originalMessage is readonly on the adapters' error classes; it is a plain field underneath.
    if (typeof withOriginal.originalMessage === 'string') Object.defineProperty(error, 'originalMessage', { value: scrubSecrets(withOriginal.originalMessage, secrets) });
    if (typeof error.stack === 'string') error.stack = scrubSecrets(error.stack, secrets);
  }
  return error;
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
