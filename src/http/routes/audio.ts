import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { SongBody, SpeechBody } from '../../endpoints/audio.ts';
import { asyncHeaders, callerOf, modeOf, sendOutcome } from '../generation-reply.ts';
import type { AppServices } from '../services.ts';

const security = [{ bearer: [] }];

/** Music (Suno-style) and speech synthesis (MiniMax-style); sync by default, async with x-async. */
export const audioRoutes = (services: AppServices): FastifyPluginAsyncTypebox => async (app) => {
  app.post('/v1/song/generations', {
    schema: {
      tags: ['generation'],
      summary: 'Generate a song; waits for the result unless x-async is set',
      description: 'Sync: the task result (output: one MP3 URL). Async: `{task_id, request_id, status}`.',
      security,
      headers: asyncHeaders,
      body: SongBody,
    },
  }, async (request, reply) => sendOutcome(reply, await services.audio.song(callerOf(request), request.body, modeOf(request))));

  app.post('/v1/speech/generations', {
    schema: {
      tags: ['generation'],
      summary: 'Synthesize speech; waits for the result unless x-async is set',
      description: 'Sync: the task result (output: one audio URL, MP3 unless `format` says otherwise). Async: `{task_id, request_id, status}`.',
      security,
      headers: asyncHeaders,
      body: SpeechBody,
    },
  }, async (request, reply) => sendOutcome(reply, await services.audio.speech(callerOf(request), request.body, modeOf(request))));
};
