/**
 * The changes made to one request for a fallback model: each value set or field dropped is a
 * line of generate_info.routing.warnings.
 */
import type { LiveModel } from '../catalog/catalog.ts';
import type { EndpointDeclaration } from '../providers/spec.ts';

type Input = Record<string, unknown>;

export class InputChanges {
  readonly warnings: string[] = [];

  readonly input: Input;
  private readonly alias: string;

  constructor(input: Input, alias: string) {
    this.input = input;
    this.alias = alias;
  }

  /** Sets `field` to `value`, `allowed` saying what the model takes instead of the value asked. */
  set(field: string, value: unknown, allowed: string): void {
    this.warnings.push(`${field} ${JSON.stringify(this.input[field])} became ${JSON.stringify(value)}: fallback model ${this.alias} takes ${allowed}`);
    this.input[field] = value;
  }

  /** Drops `field`, `why` completing "fallback model <alias> …". */
  drop(field: string, why: string): void {
    this.warnings.push(`${field} dropped: fallback model ${this.alias} ${why}`);
    delete this.input[field];
  }
}

/** What a fitter knows of the attempt: the endpoint, the fallback model and what its adapter declares for the endpoint. */
export interface FitContext {
  endpoint: string;
  target: LiveModel;
  declaration: EndpointDeclaration | undefined;
}

/**
 * Fits an endpoint's input to a fallback model in place through `changes`. Answers why the
 * model cannot take the request at all (completing "fallback model <alias> …"), or undefined.
 */
export type InputFitter = (changes: InputChanges, context: FitContext) => string | undefined;

/** A list of allowed values as a warning shows it. */
export function listOf(values: readonly (string | number)[]): string {
  return values.join(', ');
}
