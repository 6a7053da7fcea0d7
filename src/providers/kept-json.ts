/**
 * An upstream's JSON answer kept as its text (an OpenAI chat chunk or completion the gateway
 * passes on): parsed only when something reads its content, so a relay that renames the model and
 * looks for usage sends the upstream's bytes without parsing and serialising them.
 */

interface KeptState {
  data: string;
  /** The text parsed, once something read the content. */
  parsed?: Record<string, unknown>;
  /** The model name given while not parsed. */
  model?: string;
  /** The usage read from the text while not parsed. */
  usage?: { read: unknown };
}

/**
 * The key under which a kept value answers its state: read from the value, not from a WeakMap
 * keyed by it, whose values (every chunk's text) outlived the young generation with their keys.
 */
const STATE = Symbol('kept JSON');
const MODEL_FIELD = /"model"\s*:\s*"((?:[^"\\]|\\.)*)"/g;

function parsedOf(state: KeptState): Record<string, unknown> {
  if (!state.parsed) {
    state.parsed = JSON.parse(state.data) as Record<string, unknown>;
    if (state.model !== undefined) state.parsed.model = state.model;
  }
  return state.parsed;
}

/** Where the object starting at `start` ends (after its closing brace), or -1: strings skipped, nesting counted. */
function objectEnd(data: string, start: number): number {
  let depth = 0;
  for (let i = start; i < data.length; i++) {
    const c = data.charCodeAt(i);
    if (c === 34) {
      for (i++; i < data.length && data.charCodeAt(i) !== 34; i++) if (data.charCodeAt(i) === 92) i++;
    } else if (c === 123) depth++;
    else if (c === 125 && --depth === 0) return i + 1;
  }
  return -1;
}

/** Where the value of the key `key` (quoted) found at or after `from` starts, and where to look for the next one; undefined when there is none. */
function nextKey(data: string, key: string, from: number): { value: number; next: number } | undefined {
  for (let at = data.indexOf(key, from); at >= 0; at = data.indexOf(key, at + key.length)) {
    let i = at + key.length;
    while (isSpace(data.charCodeAt(i))) i++;
    // A key: inside a JSON string its quotes would be escaped, and a string value is not followed by a colon.
    if (data.charCodeAt(i) !== 58) continue;
    for (i++; isSpace(data.charCodeAt(i)); i++);
    return { value: i, next: at + key.length };
  }
  return undefined;
}

/** The length of the JSON string whose opening quote is at `quote`, as JSON.parse would give it (an escape is one character). */
function stringLength(data: string, quote: number): number {
  let length = 0;
  for (let i = quote + 1; i < data.length; i++, length++) {
    const c = data.charCodeAt(i);
    if (c === 34) break;
    if (c === 92) i += data.charCodeAt(i + 1) === 117 ? 5 : 1;
  }
  return length;
}

function isSpace(c: number): boolean {
  return c === 32 || c === 10 || c === 13 || c === 9;
}

/**
 * The usage in the text when the text tells it for sure: no usage key, `"usage": null`, or the one
 * usage key's object (parsed alone); undefined when only a whole parse can tell (several usage keys).
 */
function usageOfText(data: string): { read: unknown } | undefined {
  const key = nextKey(data, '"usage"', 0);
  if (!key) return { read: undefined };
  if (nextKey(data, '"usage"', key.next)) return undefined;
  if (data.startsWith('null', key.value)) return { read: null };
  if (data.charCodeAt(key.value) !== 123) return undefined;
  const end = objectEnd(data, key.value);
  if (end < 0) return undefined;
  try {
    return { read: JSON.parse(data.slice(key.value, end)) };
  } catch {
    return undefined;
  }
}

const keptHandler: ProxyHandler<KeptState> = {
  get(state, key) {
    if (key === STATE) return state;
    // JSON has no symbol keys; `then` is looked up by every await and yield of the value.
    if (typeof key === 'symbol' || (key === 'then' && !state.data.includes('"then"'))) return undefined;
    if (!state.parsed) {
      if (key === 'model' && state.model !== undefined) return state.model;
      if (key === 'usage') {
        state.usage ??= usageOfText(state.data);
        if (state.usage) return state.usage.read;
      }
    }
    return Reflect.get(parsedOf(state), key);
  },
  set(state, key, value) {
    if (key === 'model' && !state.parsed) state.model = value as string;
    else Reflect.set(parsedOf(state), key, value);
    return true;
  },
  // A plain object, parsed or not, has no symbol keys: `Symbol.asyncIterator in value` needs no parse.
  has: (state, key) => typeof key !== 'symbol' && Reflect.has(parsedOf(state), key),
  deleteProperty: (state, key) => Reflect.deleteProperty(parsedOf(state), key),
  ownKeys: (state) => Reflect.ownKeys(parsedOf(state)),
  getOwnPropertyDescriptor(state, key) {
    const descriptor = Reflect.getOwnPropertyDescriptor(parsedOf(state), key);
    return descriptor && { ...descriptor, configurable: true };
  },
  defineProperty: (state, key, descriptor) => Reflect.defineProperty(parsedOf(state), key, descriptor),
};

/**
 * Whether an upstream's text can be kept as an OpenAI object of that kind: one JSON object with
 * choices and no error. Anything else is parsed and checked as before.
 */
export function keepable(data: string): boolean {
  return data.charCodeAt(0) === 123 && data.charCodeAt(data.length - 1) === 125 && data.includes('"choices"') && !data.includes('"error"');
}

/** The state of a kept value whose text nothing has parsed yet; undefined for any other value. */
function unparsedState(value: object): KeptState | undefined {
  const state = (value as { [STATE]?: KeptState })[STATE];
  return state && !state.parsed ? state : undefined;
}

/** The keys of a chat chunk's answer text: a delta's content and a tool call's name and arguments. */
const COMPLETION_KEYS = ['"content"', '"name"', '"arguments"'];

/**
 * The characters of a kept chat chunk's answer text (the string values of its content, name and
 * arguments keys) read from its text, so counting them parses nothing; undefined for a value
 * that is not kept or was parsed.
 */
export function keptCompletionChars(value: object): number | undefined {
  const state = unparsedState(value);
  if (!state) return undefined;
  let chars = 0;
  for (const name of COMPLETION_KEYS) {
    for (let key = nextKey(state.data, name, 0); key; key = nextKey(state.data, name, key.next)) {
      if (state.data.charCodeAt(key.value) === 34) chars += stringLength(state.data, key.value);
    }
  }
  return chars;
}

/** The text as the object it holds, parsed only when its content is read (model and usage excepted). */
export function keptJson<T extends object>(data: string): T {
  return new Proxy({ data } satisfies KeptState, keptHandler) as unknown as T;
}

/** The JSON text of `value`: the kept text as it came when nothing changed but its model name, else its JSON. */
export function jsonText(value: object): string {
  const state = unparsedState(value);
  if (!state) return JSON.stringify(value);
  if (state.model === undefined) return state.data;
  MODEL_FIELD.lastIndex = 0;
  const found = MODEL_FIELD.exec(state.data);
  // The model named more than once (a provider's own field), or not at all: only a parse tells which is the object's.
  if (!found || MODEL_FIELD.exec(state.data)) return JSON.stringify(parsedOf(state));
  const [field, current] = found;
  if (current === state.model) return state.data;
  return `${state.data.slice(0, found.index)}"model":${JSON.stringify(state.model)}${state.data.slice(found.index + field.length)}`;
}
