/**
 * Upstream replies read through schemas of what an adapter uses of them: extra fields are
 * allowed, the fields read are typed, and a reply of another shape is one failure naming the
 * provider and where the reply differs (`kling: unexpected reply: /data/task_status must be string`).
 */
import { Type, type Static, type TSchema } from 'typebox';
import { Compile, type Validator } from 'typebox/compile';
import type { TLocalizedValidationError } from 'typebox/error';
import { ApiError } from '../core/errors.ts';
import { TaskFailedError } from './spec.ts';

/** A compiled schema of an upstream reply. */
export type ReplySchema<T extends TSchema = TSchema> = Validator<{}, T>;

/** What a reply schema reads: the reply's type once it matched. */
export type ReplyOf<S> = S extends ReplySchema<infer T> ? Static<T> : never;

/** Compiles a reply schema; called at module load, so each schema compiles once. */
export function replySchema<T extends TSchema>(schema: T): ReplySchema<T> {
  return Compile(schema);
}

/** A field that may be absent or null (upstreams send null for what they leave empty). */
export function OptionalNullable<T extends TSchema>(schema: T) {
  return Type.Optional(Type.Union([schema, Type.Null()]));
}

/** The JSON pointer an error is about: a missing property's own path, not its parent's. */
function pathOf(error: TLocalizedValidationError): string {
  if (error.keyword !== 'required') return error.instancePath;
  const missing = (error.params as { requiredProperties?: string[] }).requiredProperties?.[0];
  return missing === undefined ? error.instancePath : `${error.instancePath}/${missing}`;
}

/**
 * The failure's message: the provider, where the reply differs and what its value must be (the
 * deepest path of the errors). A value that matches no member of a union has an error for each
 * member and one for the union; the member that got furthest says the most (OptionalNullable
 * lists the value's own schema before null, so a value of the wrong type is told that type).
 */
function mismatchOf(schema: ReplySchema, reply: unknown, provider: string, at: string): string {
  const errors = schema.Errors(reply);
  const depth = (error: TLocalizedValidationError) => pathOf(error).split('/').length;
  const first = errors.reduce((a, b) => (depth(b) > depth(a) ? b : a), errors[0]!);
  const path = at + pathOf(first) || '/';
  return `${provider}: unexpected reply: ${path} ${expectationOf(first)}`;
}

/** What the value at an error's path must be, in words ("must be string", "is missing", `must be "message"`). */
function expectationOf(error: TLocalizedValidationError): string {
  if (error.keyword === 'required') return 'is missing';
  if (error.keyword === 'const') return `must be ${JSON.stringify((error.params as { allowedValue?: unknown }).allowedValue)}`;
  return error.message;
}

/**
 * A generation task's reply (see replyJson) as its schema types it; a reply of another shape
 * fails the task (TaskFailedError), with the reply as the upstream's own text. `at` is the JSON
 * pointer of `reply` in the whole reply when it is a part read on its own (a block of a list).
 */
export function readReply<T extends TSchema>(schema: ReplySchema<T>, reply: unknown, provider: string, at = ''): Static<T> {
  if (schema.Check(reply)) return reply as Static<T>;
  throw new TaskFailedError(mismatchOf(schema, reply, provider, at), JSON.stringify(reply)?.slice(0, 2000));
}

/**
 * The answer of a call the caller waits for (chat, embeddings, rerank) as its schema types it
 * (`at` as readReply's); an answer of another shape is the upstream's failure, as a body that is
 * not JSON is (502 upstream_error).
 */
export function readAnswer<T extends TSchema>(schema: ReplySchema<T>, reply: unknown, provider: string, at = ''): Static<T> {
  if (schema.Check(reply)) return reply as Static<T>;
  throw new ApiError('upstream_error', mismatchOf(schema, reply, provider, at));
}
