import type { FastifyInstance } from 'fastify';

const WRITES = new Set(['POST', 'PUT', 'PATCH']);

function isJsonObject(body: unknown): boolean {
  return body !== null && typeof body === 'object' && !Array.isArray(body);
}

/** The validation error of a body that is not an object, as the error plugin reads it (it names `body`). */
function notAnObject(): Error {
  return Object.assign(new Error('the body must be a JSON object'), {
    validation: [{ keyword: 'type', instancePath: '', params: { type: 'object' }, message: 'must be a JSON object' }],
    validationContext: 'body',
  });
}

/**
 * What route schemas cannot say of bodies. Fastify does not validate a missing body when a schema
 * is given per content type, so a route with a body schema that got none (nor a multipart form,
 * which its route reads) is refused here. With `bareWritesTakeObjects` (the admin group), a write
 * with no body schema takes no body or a JSON object (the console sends `{}`), nothing else.
 * Registered on each group after its auth and admission: a refused body still went through them.
 */
export function registerBodyChecks(group: FastifyInstance, options: { bareWritesTakeObjects: boolean }): void {
  group.addHook('preValidation', (request, _reply, done) => {
    if (!WRITES.has(request.method) || request.isMultipart()) return done();
    const hasSchema = request.routeOptions.schema?.body !== undefined;
    if (request.body === undefined) return done(hasSchema ? notAnObject() : undefined);
    done(options.bareWritesTakeObjects && !hasSchema && !isJsonObject(request.body) ? notAnObject() : undefined);
  });
}
