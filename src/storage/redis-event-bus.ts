import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import type { Logger } from 'pino';
import { failFastOptions, reconnectingOptions, redisUnavailable } from './redis-connection.ts';
import type { BusTopic, BusTopics, EventBus } from './event-bus.ts';

export interface RedisEventBusOptions {
  /** REDIS_URL. */
  url: string;
  /** REDIS_PREFIX: channels are `<prefix>:events:<topic>`. */
  prefix: string;
  /** REDIS_TIMEOUT_MS: a publish fails after this long without an answer. */
  timeoutMs: number;
  logger: Logger;
}

type Handler = (message: unknown) => void;

/** JSON's whitespace characters. */
const WHITESPACE = [' ', '\t', '\n', '\r'];

/**
 * 32 of JSON's whitespace characters drawn at random (64 bits): an instance's messages start with
 * its own, so it knows them among those Redis sends it without parsing them, while any JSON
 * reader, an older instance's included, reads the message as before.
 */
function whitespaceStamp(): string {
  return [...randomBytes(8)].flatMap((byte) => [6, 4, 2, 0].map((shift) => WHITESPACE[(byte >> shift) & 3]!)).join('');
}

/** Redis glob metacharacters, escaped so a prefix matches only itself. */
function escapeGlob(text: string): string {
  return text.replace(/[*?[\]\\]/g, '\\$&');
}

/**
 * The bus of a deployment with REDIS_URL: every message goes through Redis pub/sub as JSON, so
 * all instances receive it exactly once. The publishing instance hands it to its own handlers at
 * once, as the in-process bus does, and drops its copy from Redis unread: parsing back what it
 * just wrote cost a task a few percent of its CPU. One connection publishes; the other only
 * listens (a subscribed Redis connection cannot send other commands). While Redis is unreachable
 * a publish fails within REDIS_TIMEOUT_MS (503 service_unavailable) and the other instances miss
 * the message; the listener subscribes again when Redis is back.
 */
export class RedisEventBus implements EventBus {
  private readonly handlers = new Map<string, Set<Handler>>();
  private readonly channelPrefix: string;
  /** What this instance's messages start with (see whitespaceStamp). */
  private readonly stamp = whitespaceStamp();

  private readonly publisher: Redis;
  private readonly subscriber: Redis;
  private readonly opts: RedisEventBusOptions;

  private constructor(
    publisher: Redis,
    subscriber: Redis,
    opts: RedisEventBusOptions,
  ) {
    this.publisher = publisher;
    this.subscriber = subscriber;
    this.opts = opts;
    this.channelPrefix = `${opts.prefix}:events:`;
  }

  /**
   * Connects and listens to every topic before answering, so no message published after the
   * start can be missed by a subscription made during it.
   */
  static async connect(opts: RedisEventBusOptions): Promise<RedisEventBus> {
    const log = opts.logger;
    const publisher = new Redis(opts.url, { ...failFastOptions(opts.timeoutMs), connectionName: `${opts.prefix}:events:pub`, lazyConnect: true });
    const subscriber = new Redis(opts.url, { ...reconnectingOptions(opts.timeoutMs), connectionName: `${opts.prefix}:events:sub`, lazyConnect: true });
    let lastError: Error | undefined;
    for (const [conn, role] of [[publisher, 'publisher'], [subscriber, 'subscriber']] as const) {
      // ioredis reconnects by itself; without a listener an error would only reach stderr.
      conn.on('error', (err: Error) => {
        lastError = err;
        log.warn({ err, role }, 'redis event bus connection error');
      });
    }
    const bus = new RedisEventBus(publisher, subscriber, opts);
    try {
      await Promise.all([publisher.connect(), subscriber.connect()]);
      subscriber.on('pmessage', (_pattern: string, channel: string, text: string) => bus.deliver(channel, text));
      await subscriber.psubscribe(`${escapeGlob(bus.channelPrefix)}*`);
    } catch (err) {
      publisher.disconnect();
      subscriber.disconnect();
      // ioredis reports only "Connection is closed"; the cause is the last connection error.
      throw new Error(`Redis (REDIS_URL) is not reachable: ${(lastError ?? (err as Error)).message}`);
    }
    return bus;
  }

  async publish<T extends BusTopic>(topic: T, message: BusTopics[T]): Promise<void> {
    // Written before the handlers run: what they do to the message does not go out.
    const text = this.stamp + JSON.stringify(message);
    this.handOut(topic, message);
    try {
      await this.publisher.publish(this.channelPrefix + topic, text);
    } catch (err) {
      throw redisUnavailable(`the ${topic} message cannot be sent to the other instances`, err);
    }
  }

  /** Fails when Redis does not answer within REDIS_TIMEOUT_MS (GET /healthz). */
  async ping(): Promise<void> {
    await this.publisher.ping();
  }

  subscribe<T extends BusTopic>(topic: T, handler: (message: BusTopics[T]) => void): () => void {
    const set = this.handlers.get(topic) ?? new Set<Handler>();
    const entry = handler as Handler;
    set.add(entry);
    this.handlers.set(topic, set);
    return () => {
      set.delete(entry);
      if (set.size === 0 && this.handlers.get(topic) === set) this.handlers.delete(topic);
    };
  }

  async close(): Promise<void> {
    this.handlers.clear();
    await Promise.allSettled([this.publisher.quit(), this.subscriber.quit()]);
  }

  private deliver(channel: string, text: string): void {
    if (!channel.startsWith(this.channelPrefix) || text.startsWith(this.stamp)) return;
    const topic = channel.slice(this.channelPrefix.length);
    if (!this.handlers.has(topic)) return;
    let message: unknown;
    try {
      message = JSON.parse(text);
    } catch (err) {
      this.opts.logger.warn({ err, channel }, 'dropping a bus message that is not JSON');
      return;
    }
    this.handOut(topic, message);
  }

  private handOut(topic: string, message: unknown): void {
    const set = this.handlers.get(topic);
    if (!set) return;
    for (const handler of [...set]) {
      try {
        handler(message);
      } catch (err) {
        // One failing consumer must not keep the message from the others.
        this.opts.logger.error({ err, topic }, 'a bus subscriber failed');
      }
    }
  }
}
