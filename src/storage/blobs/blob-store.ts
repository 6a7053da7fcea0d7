import type { Readable } from 'node:stream';

/** What a presigned URL answers with besides the bytes. */
export interface PresignOptions {
  /** How long the URL works, in seconds. */
  ttlSeconds: number;
  contentType: string;
  contentDisposition: string;
  cacheControl: string;
}

/**
 * Where file bytes live. Keys are relative, slash-separated names (`files/<id>`,
 * `assets/<hash>`); an S3 implementation maps them to object keys.
 */
export interface BlobStore {
  /** Writes the whole source under key, replacing any old value atomically; answers the byte count. */
  put(key: string, source: Readable | Buffer): Promise<number>;
  /** Reads the value, or undefined when the key is absent. */
  open(key: string): Promise<Readable | undefined>;
  /** Size of the value, or undefined when the key is absent. */
  size(key: string): Promise<number | undefined>;
  /** Renames a value (used to file content under its hash once computed). */
  move(from: string, to: string): Promise<void>;
  /** Removes the value; absent keys are fine. */
  delete(key: string): Promise<void>;
  /** A URL that serves the value without the gateway for a while; only stores reachable by clients (S3) have one. */
  presign?(key: string, opts: PresignOptions): Promise<string>;
  /** Releases connections; the store is not used afterwards. */
  close?(): void;
}
