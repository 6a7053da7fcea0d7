import type { FastifyRequest } from 'fastify';
import type { MultipartFile } from '@fastify/multipart';
import { Type } from 'typebox';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { AgentScope } from '../../agent/knowledge-service.ts';
import { ApiError } from '../../core/errors.ts';
import type { AppServices } from '../services.ts';

const security = [{ bearer: [] }];
/** Longest document text accepted as JSON (a text file may be as large as the upload limit). */
const MAX_JSON_DOCUMENT_CHARS = 1_000_000;

const Agent = Type.Object({
  id: Type.String(),
  object: Type.Literal('agent'),
  name: Type.String(),
  instructions: Type.Union([Type.String(), Type.Null()]),
  main: Type.Boolean({ description: 'the deployment\'s main agent (useGlobalMainAgent)' }),
  personal: Type.Boolean({ description: 'false for an agent of the deployment, created with the admin token' }),
  document_count: Type.Integer(),
  created_at: Type.Integer({ description: 'Unix seconds' }),
});

const AgentDocument = Type.Object({
  id: Type.String(),
  object: Type.Literal('agent.document'),
  agent_id: Type.String(),
  title: Type.String(),
  characters: Type.Integer(),
  created_at: Type.Integer({ description: 'Unix seconds' }),
});

const CreateAgentBody = Type.Object({
  name: Type.String({ minLength: 1, maxLength: 200 }),
  instructions: Type.Optional(Type.String({ maxLength: 100_000, description: 'system instructions of the agent' })),
  main: Type.Optional(Type.Boolean({ description: 'admin token only (POST /admin/agents): the agent useGlobalMainAgent resolves; replaces the previous main agent' })),
}, { additionalProperties: false });

const DocumentBody = Type.Object({
  title: Type.String({ minLength: 1, maxLength: 500 }),
  content: Type.String({ minLength: 1, maxLength: MAX_JSON_DOCUMENT_CHARS }),
}, { additionalProperties: false });

const AgentParams = Type.Object({ id: Type.String({ minLength: 1 }) });
const DocumentParams = Type.Object({ id: Type.String({ minLength: 1 }), docId: Type.String({ minLength: 1 }) });

/** The text of an uploaded document: UTF-8 without NUL characters, or a 400 naming `file`. */
function documentText(bytes: Buffer): string {
  let text: string;
  try {
    text = new TextDecoder('utf-8', { fatal: true }).decode(bytes);
  } catch {
    throw new ApiError('invalid_parameter', 'file must be a UTF-8 text file (plain text, Markdown, CSV, JSON, …)', 'file');
  }
  if (text.includes('\0')) throw new ApiError('invalid_parameter', 'file must be a text file, not binary data', 'file');
  return text.replace(/^\uFEFF/, '');
}

/** A document sent as multipart: a text `file` part and an optional `title` (default: the file name). */
async function documentFromForm(request: FastifyRequest, maxBytes: number): Promise<{ title: string; content: string }> {
  let title: string | undefined;
  let file: { name: string; bytes: Buffer } | undefined;
  for await (const part of request.parts()) {
    if (part.type === 'field') {
      if (part.fieldname === 'title') title = String(part.value).trim() || undefined;
      continue;
    }
    const filePart = part as MultipartFile;
    if (filePart.fieldname !== 'file') {
      filePart.file.resume();
      continue;
    }
    if (file) throw new ApiError('invalid_parameter', 'send one file', 'file');
    let bytes: Buffer;
    try {
      bytes = await filePart.toBuffer();
    } catch (err) {
      if ((err as { code?: string }).code === 'FST_REQ_FILE_TOO_LARGE') throw new ApiError('file_too_large', `file is larger than the ${+(maxBytes / 1024 / 1024).toFixed(2)} MB limit`, 'file');
      throw err;
    }
    file = { name: filePart.filename || 'document.txt', bytes };
  }
  if (!file) throw new ApiError('missing_parameter', 'file is required (or send JSON {title, content})', 'file');
  if (title && title.length > 500) throw new ApiError('invalid_parameter', 'title must be at most 500 characters', 'title');
  return { title: title ?? file.name, content: documentText(file.bytes) };
}

/**
 * Knowledge-base agents and their documents: `/v1/agents` for the caller's own agents, and
 * `/admin/agents` (registered in the admin group) for the deployment's agents, which every user
 * may name as agentId and of which one may be the main agent.
 */
export const agentRoutes = (services: AppServices, prefix: '/v1/agents' | '/admin/agents'): FastifyPluginAsyncTypebox => async (app) => {
  const { knowledge } = services.agents;
  const deployment = prefix === '/admin/agents';
  const tags = [deployment ? 'admin' : 'agent'];
  const scopeOf = (request: FastifyRequest): AgentScope => (deployment ? { deployment: true } : { ownerId: request.ctx.principal.userId });

  app.post(prefix, {
    schema: { tags, summary: 'Create a knowledge-base agent', security, body: CreateAgentBody, response: { 201: Agent } },
  }, async (request, reply) => reply.code(201).send(await knowledge.createAgent(scopeOf(request), request.body)));

  app.get(prefix, {
    schema: { tags, summary: 'List agents, newest first', security, response: { 200: Type.Object({ object: Type.Literal('list'), data: Type.Array(Agent) }) } },
  }, async (request) => ({ object: 'list' as const, data: await knowledge.listAgents(scopeOf(request)) }));

  app.get(`${prefix}/:id`, {
    schema: { tags, summary: 'One agent', security, params: AgentParams, response: { 200: Agent } },
  }, async (request) => knowledge.getAgent(scopeOf(request), request.params.id));

  app.delete(`${prefix}/:id`, {
    schema: { tags, summary: 'Delete an agent and its documents', security, params: AgentParams },
  }, async (request, reply) => {
    await knowledge.deleteAgent(scopeOf(request), request.params.id);
    return reply.code(204).send();
  });

  app.post(`${prefix}/:id/documents`, {
    schema: {
      tags,
      summary: 'Add a document to the agent\'s knowledge base',
      description: 'JSON `{title, content}`, or multipart/form-data with a UTF-8 text `file` part and an optional `title` (default: the file name). The text is split into passages and indexed for full-text search at once.',
      security,
      params: AgentParams,
      body: { content: { 'application/json': { schema: DocumentBody } } },
      response: { 201: AgentDocument },
    },
  }, async (request, reply) => {
    const input = request.isMultipart() ? await documentFromForm(request, services.settings.maxFileBytes) : (request.body as { title: string; content: string });
    return reply.code(201).send(await knowledge.addDocument(scopeOf(request), request.params.id, input));
  });

  app.get(`${prefix}/:id/documents`, {
    schema: { tags, summary: 'The agent\'s documents (without their text)', security, params: AgentParams, response: { 200: Type.Object({ object: Type.Literal('list'), data: Type.Array(AgentDocument) }) } },
  }, async (request) => ({ object: 'list' as const, data: await knowledge.listDocuments(scopeOf(request), request.params.id) }));

  app.delete(`${prefix}/:id/documents/:docId`, {
    schema: { tags, summary: 'Remove a document from the knowledge base', security, params: DocumentParams },
  }, async (request, reply) => {
    await knowledge.deleteDocument(scopeOf(request), request.params.id, request.params.docId);
    return reply.code(204).send();
  });
};
