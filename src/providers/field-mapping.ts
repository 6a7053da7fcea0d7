/** One request field an upstream takes, under the upstream's name for it. */
export interface FieldRule {
  /** The gateway's field (its API name). */
  from: string;
  /** The upstream's field. */
  to: string;
  /** Turns the value into what the upstream expects (e.g. a boolean into 0/1); default: as it is. */
  convert?: (value: unknown) => unknown;
}

function isSet(value: unknown): boolean {
  return value !== undefined && value !== null;
}

/** The upstream fields of a request: each rule's field the request sets, renamed and converted. */
export function mapFields(input: Record<string, unknown>, rules: readonly FieldRule[]): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const rule of rules) {
    const value = input[rule.from];
    if (isSet(value)) out[rule.to] = rule.convert ? rule.convert(value) : value;
  }
  return out;
}

/** Which of `names` the request sets: options the chosen upstream call does not take, to warn about. */
export function fieldsSet(input: Record<string, unknown>, names: readonly string[]): string[] {
  return names.filter((name) => isSet(input[name]));
}
