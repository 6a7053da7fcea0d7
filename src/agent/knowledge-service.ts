import { ApiError } from '../core/errors.ts';
import { newId } from '../core/ids.ts';
import type { AgentScope, AgentsRepo, DocumentWithSize, PassageHit } from '../storage/repos/agents-repo.ts';
import type { AgentRow } from '../storage/schema.ts';

export type { AgentScope, PassageHit };

/** Longest passage the index holds; a document is cut at paragraph, then word, boundaries. */
const PASSAGE_CHARS = 1200;
/** Words of a question used for retrieval. */
const MAX_QUERY_TERMS = 32;
/** Passages handed to the model per request. */
const PASSAGES_PER_ANSWER = 4;

/** English words too common to say what a question is about (both stores then stem the rest). */
const STOP_WORDS = new Set(`a about above after again against all am an and any are as at be because been before being below
between both but by can could did do does doing down during each few for from further had has have having he her here hers
herself him himself his how i if in into is it its itself just me more most my myself no nor not now of off on once only or
other our ours ourselves out over own same she should so some such than that the their theirs them themselves then there these
they this those through to too under until up very was we were what when where which while who whom why will with would you
your yours yourself yourselves tell know please give show explain describe`.split(/\s+/));

export interface AgentInput {
  name: string;
  instructions?: string;
  main?: boolean;
}

/** An agent as the API shows it. */
export interface Agent {
  id: string;
  object: 'agent';
  name: string;
  instructions: string | null;
  /** The deployment's main agent (useGlobalMainAgent). */
  main: boolean;
  /** false for an agent of the deployment, created with the admin token. */
  personal: boolean;
  document_count: number;
  /** Unix seconds. */
  created_at: number;
}

export interface AgentDocument {
  id: string;
  object: 'agent.document';
  agent_id: string;
  title: string;
  characters: number;
  /** Unix seconds. */
  created_at: number;
}

function documentOf(row: DocumentWithSize): AgentDocument {
  return { id: row.id, object: 'agent.document', agent_id: row.agent_id, title: row.title, characters: row.characters, created_at: Math.floor(row.created_at / 1000) };
}

/** A long paragraph in pieces of at most `max` characters, cut at whitespace where there is some. */
function splitLong(paragraph: string, max: number): string[] {
  const pieces: string[] = [];
  let rest = paragraph;
  while (rest.length > max) {
    const cut = rest.lastIndexOf(' ', max);
    const at = cut > max / 2 ? cut : max;
    pieces.push(rest.slice(0, at).trim());
    rest = rest.slice(at).trim();
  }
  if (rest) pieces.push(rest);
  return pieces;
}

/** A document's text as indexed passages: paragraphs joined up to the passage size, long ones cut. */
function passagesOf(text: string, max = PASSAGE_CHARS): string[] {
  const passages: string[] = [];
  let current = '';
  for (const paragraph of text.split(/\n\s*\n/).map((p) => p.trim()).filter(Boolean)) {
    for (const piece of splitLong(paragraph, max)) {
      if (current && current.length + 2 + piece.length > max) {
        passages.push(current);
        current = '';
      }
      current = current ? `${current}\n\n${piece}` : piece;
    }
  }
  if (current) passages.push(current);
  return passages;
}

/** The words of a question worth searching for: lower-cased letters and digits, stop words and single letters left out. */
function searchTerms(question: string): string[] {
  const terms = new Set<string>();
  for (const [word] of question.toLowerCase().matchAll(/[\p{L}\p{N}]+/gu)) {
    if (word.length < 2 || STOP_WORDS.has(word)) continue;
    terms.add(word);
    if (terms.size === MAX_QUERY_TERMS) break;
  }
  return [...terms];
}

/**
 * Knowledge-base agents and their documents. A user's agents are its own; agents of the
 * deployment (created with the admin token) can be named by every user, and one of them may be
 * the main agent that `useGlobalMainAgent` resolves.
 */
export class KnowledgeService {
  private readonly repo: AgentsRepo;

  constructor(repo: AgentsRepo) {
    this.repo = repo;
  }

  async createAgent(scope: AgentScope, input: AgentInput, now = Date.now()): Promise<Agent> {
    const deployment = !('ownerId' in scope);
    if (input.main && !deployment) throw new ApiError('admin_required', 'only the admin token creates the main agent (POST /admin/agents)');
    const row: AgentRow = {
      id: newId('agent'),
      owner_id: deployment ? null : scope.ownerId,
      name: input.name,
      instructions: input.instructions ?? null,
      main: input.main ? 1 : 0,
      created_at: now,
    };
    await this.repo.insertAgent(row);
    return this.agentOf(row, 0);
  }

  async listAgents(scope: AgentScope): Promise<Agent[]> {
    const rows = await this.repo.listAgents(scope);
    const counts = await Promise.all(rows.map((row) => this.repo.countDocuments(row.id)));
    return rows.map((row, i) => this.agentOf(row, counts[i]));
  }

  async getAgent(scope: AgentScope, id: string): Promise<Agent> {
    const row = await this.agentIn(scope, id);
    return this.agentOf(row, await this.repo.countDocuments(row.id));
  }

  async deleteAgent(scope: AgentScope, id: string): Promise<void> {
    await this.repo.deleteAgent((await this.agentIn(scope, id)).id);
  }

  /** Adds a document to the agent's knowledge base; its passages are searchable at once. */
  async addDocument(scope: AgentScope, agentId: string, input: { title: string; content: string }, now = Date.now()): Promise<AgentDocument> {
    const agent = await this.agentIn(scope, agentId);
    const passages = passagesOf(input.content);
    if (passages.length === 0) throw new ApiError('invalid_parameter', 'the document has no text', 'content');
    const row = { id: newId('doc'), agent_id: agent.id, title: input.title, content: input.content, created_at: now };
    await this.repo.insertDocument(row, passages);
    return documentOf({ ...row, characters: input.content.length });
  }

  async listDocuments(scope: AgentScope, agentId: string): Promise<AgentDocument[]> {
    const agent = await this.agentIn(scope, agentId);
    return (await this.repo.listDocuments(agent.id)).map(documentOf);
  }

  async deleteDocument(scope: AgentScope, agentId: string, documentId: string): Promise<void> {
    const agent = await this.agentIn(scope, agentId);
    if (!(await this.repo.deleteDocument(agent.id, documentId))) throw new ApiError('document_not_found', `agent ${agentId} has no document ${documentId}`, 'docId');
  }

  /** The agent a /v1/responses request names: one of the caller's, or one of the deployment's. */
  async agentForRequest(ownerId: string, agentId: string): Promise<AgentRow> {
    const row = await this.repo.findAgent(agentId);
    if (!row || (row.owner_id !== null && row.owner_id !== ownerId)) throw new ApiError('agent_not_found', `no agent ${agentId}`, 'agentId');
    return row;
  }

  /** The deployment's main agent, when an administrator made one. */
  async mainAgent(): Promise<AgentRow | undefined> {
    return this.repo.findMainAgent();
  }

  /** The agent's passages that best match the question; none when no word of it is in the knowledge base. */
  async retrieve(agentId: string, question: string): Promise<PassageHit[]> {
    return this.repo.search(agentId, searchTerms(question), PASSAGES_PER_ANSWER);
  }

  private async agentIn(scope: AgentScope, id: string): Promise<AgentRow> {
    const row = await this.repo.findAgent(id);
    const visible = row && ('ownerId' in scope ? row.owner_id === scope.ownerId : row.owner_id === null);
    if (!visible) throw new ApiError('agent_not_found', `no agent ${id}`, 'id');
    return row;
  }

  private agentOf(row: AgentRow, documents: number): Agent {
    return {
      id: row.id,
      object: 'agent',
      name: row.name,
      instructions: row.instructions,
      main: row.main === 1,
      personal: row.owner_id !== null,
      document_count: documents,
      created_at: Math.floor(row.created_at / 1000),
    };
  }
}
