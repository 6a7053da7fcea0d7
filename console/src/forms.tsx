import { useState } from 'react';
import { ApiFailure } from './api.ts';

/** Field errors of a form: ones found before sending, and the server's, placed by its `param`. */
export function useFieldErrors() {
  const [errors, setErrors] = useState<Record<string, string>>({});
  return {
    errors,
    /** Sets the errors found before sending; answers whether there were none. */
    check(found: Record<string, string | undefined>): boolean {
      const present = Object.fromEntries(Object.entries(found).filter((e): e is [string, string] => e[1] !== undefined));
      setErrors(present);
      return Object.keys(present).length === 0;
    },
    /** Places a failed call's error next to its field (the first part of `param`), else under the form. */
    fail(err: unknown) {
      const field = err instanceof ApiFailure && err.param && err.param !== 'body' ? err.param.split(/[.[]/)[0]! : 'form';
      setErrors({ [field]: `${err instanceof ApiFailure ? `${err.code}: ` : ''}${(err as Error).message}` });
    },
    clear: () => setErrors({}),
  };
}

/** The error of one field, shown right after it. */
export function FieldError({ errors, field }: { errors: Record<string, string>; field: string }) {
  return errors[field] ? <span className="error field-error" data-field-error={field}>{errors[field]}</span> : null;
}

export const isHttpUrl = (value: string) => /^https?:\/\/[^\s]+$/i.test(value);

/** undefined when the text is empty, else its number (NaN when it is none). */
export const numberOrUndefined = (text: string) => (text.trim() === '' ? undefined : Number(text));
