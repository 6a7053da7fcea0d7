/**
 * JSON Schema validators (ajv) compiled once per process for each distinct schema. A compiled
 * validator is a pure function of its schema and the ajv options, so every app built in one
 * process (a restart in place, the test servers) and every place that checks the same schema
 * shares it. Compiling is most of what building the HTTP app costs, and a process uses few of the
 * routes it declares, so a validator is compiled at its first call.
 */
import { Ajv, type AnySchema, type Options, type ValidateFunction } from 'ajv';
import addFormatsModule from 'ajv-formats';

const addFormats = addFormatsModule as unknown as (ajv: Ajv) => Ajv;

/** Validators of one set of ajv options, keyed by the schema's JSON text. */
export class SchemaValidators {
  private readonly ajv: Ajv;
  // Keyed by content, not identity: Fastify hands the compiler fresh copies (a route's header
  // schema with lower-cased names) and routes build their small schemas inline.
  private readonly compiled = new Map<string, ValidateFunction>();

  constructor(options: Options, formats: boolean) {
    this.ajv = new Ajv(options);
    if (formats) addFormats(this.ajv);
  }

  /** The validator of `schema`; ajv compiles it when it first validates a value. */
  compile(schema: unknown): ValidateFunction {
    const key = JSON.stringify(schema);
    let validate = this.compiled.get(key);
    if (!validate) {
      let compiled: ValidateFunction | undefined;
      const lazy = ((data: unknown) => {
        compiled ??= this.ajv.compile(schema as AnySchema);
        const valid = compiled(data);
        // Callers read the errors from the function they called, as ajv's own validators keep them.
        lazy.errors = compiled.errors;
        return valid;
      }) as ValidateFunction;
      validate = lazy;
      this.compiled.set(key, validate);
    }
    return validate;
  }
}

const REQUEST_VALUES: Options = { useDefaults: true, removeAdditional: false, allErrors: false, strict: false };

/** Request bodies (routes, batch lines, MCP tool arguments): values taken as sent (a string is never a number), defaults filled in. */
export const bodyValidators = new SchemaValidators({ ...REQUEST_VALUES, coerceTypes: false }, true);

/** Query strings, path parameters, headers and multipart text fields: text, coerced to the schema's types. */
export const textValidators = new SchemaValidators({ ...REQUEST_VALUES, coerceTypes: 'array' }, true);
