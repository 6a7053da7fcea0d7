import { Type } from 'typebox';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { AppServices } from '../services.ts';

const ChannelView = Type.Object({
  provider: Type.String(),
  name: Type.String(),
  models: Type.Array(Type.String(), { description: 'catalog aliases it serves' }),
  state: Type.Union([Type.Literal('healthy'), Type.Literal('cooling_down'), Type.Literal('disabled')]),
  disabled_reason: Type.Union([Type.String(), Type.Null()]),
  consecutive_failures: Type.Integer(),
  error_rate_1m: Type.Number({ description: 'failed share of the last minute\'s calls' }),
  latency_p50_ms_1m: Type.Union([Type.Number(), Type.Null()], { description: 'median latency of the last minute\'s calls (streams: to the first chunk)' }),
  in_flight: Type.Integer(),
});

const ChannelParams = Type.Object({ provider: Type.String({ minLength: 1 }), name: Type.String({ minLength: 1 }) });

const security = [{ bearer: [] }];

/** Admin API: the providers' channels, their health, and disabling or enabling one. */
export const adminChannelRoutes = (services: AppServices): FastifyPluginAsyncTypebox => async (app) => {
  app.get('/admin/channels', {
    schema: { tags: ['admin'], summary: 'Every configured channel with its state and last minute\'s figures', security, response: { 200: Type.Object({ data: Type.Array(ChannelView) }) } },
  }, async () => ({ data: services.routing.list() }));

  app.post('/admin/channels/:provider/:name/disable', {
    schema: {
      tags: ['admin'],
      summary: 'Take a channel out of rotation until it is enabled again (kept across restarts, for every instance)',
      security,
      params: ChannelParams,
      body: Type.Object({ reason: Type.Optional(Type.String({ minLength: 1, maxLength: 500 })) }, { additionalProperties: false }),
      response: { 200: ChannelView },
    },
  }, async (request) => {
    const { provider, name } = request.params;
    const before = services.routing.find(provider, name) && services.routing.view(services.routing.find(provider, name)!);
    const after = services.routing.view(await services.routing.disable(provider, name, request.body.reason ?? 'disabled by an administrator'));
    request.ctx.audit.push({ action: 'channel.disable', target: `channel:${provider}/${name}`, before: before ?? null, after });
    return after;
  });

  app.post('/admin/channels/:provider/:name/enable', {
    schema: { tags: ['admin'], summary: 'Put a channel back into rotation with no failures counted', security, params: ChannelParams, response: { 200: ChannelView } },
  }, async (request) => {
    const { provider, name } = request.params;
    const before = services.routing.find(provider, name) && services.routing.view(services.routing.find(provider, name)!);
    const after = services.routing.view(await services.routing.enable(provider, name));
    request.ctx.audit.push({ action: 'channel.enable', target: `channel:${provider}/${name}`, before: before ?? null, after });
    return after;
  });
};
