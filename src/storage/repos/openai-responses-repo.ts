import type { ChatInputMessage } from '../../core/chat-input.ts';
import type { Db } from '../db.ts';

/** A stored response: the conversation it ends and the response object. */
export interface StoredResponse {
  messages: ChatInputMessage[];
  response: Record<string, unknown>;
}

/** SQL for the responses of /openai/v1/responses. */
export class OpenAiResponsesRepo {
  private readonly db: Db;

  constructor(db: Db) {
    this.db = db;
  }

  async insert(ownerId: string, id: string, stored: StoredResponse, now = Date.now()): Promise<void> {
    await this.db.kysely
      .insertInto('openai_responses')
      .values({ id, owner_id: ownerId, messages: JSON.stringify(stored.messages), response: JSON.stringify(stored.response), created_at: now })
      .execute();
  }

  /** The owner's response with that id; undefined for an unknown id or another owner's. */
  async find(ownerId: string, id: string): Promise<StoredResponse | undefined> {
    const row = await this.db.kysely
      .selectFrom('openai_responses')
      .select(['messages', 'response'])
      .where('id', '=', id)
      .where('owner_id', '=', ownerId)
      .executeTakeFirst();
    return row && { messages: JSON.parse(row.messages) as ChatInputMessage[], response: JSON.parse(row.response) as Record<string, unknown> };
  }
}
