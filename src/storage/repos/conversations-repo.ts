import type { ChatMessage } from '../../core/chat-messages.ts';
import type { Db } from '../db.ts';

/** SQL for chat conversations: each owner's messages of a conversation, in order. */
export class ConversationsRepo {
  private readonly db: Db;

  constructor(db: Db) {
    this.db = db;
  }

  /** The stored messages of the owner's conversation, oldest first; none for an unknown one. */
  async history(ownerId: string, conversationId: string): Promise<ChatMessage[]> {
    const rows = await this.db.kysely
      .selectFrom('conversation_messages')
      .select('message')
      .where('owner_id', '=', ownerId)
      .where('conversation_id', '=', conversationId)
      .orderBy('seq')
      .execute();
    return rows.map((row) => JSON.parse(row.message) as ChatMessage);
  }

  /**
   * Appends messages to the owner's conversation, creating it on first use. The conversation's
   * count is raised first, so concurrent turns each get their own range of numbers.
   */
  async append(ownerId: string, conversationId: string, messages: ChatMessage[], now = Date.now()): Promise<void> {
    await this.db.kysely.transaction().execute(async (trx) => {
      const { message_count: count } = await trx
        .insertInto('conversations')
        .values({ owner_id: ownerId, id: conversationId, message_count: messages.length, created_at: now, updated_at: now })
        .onConflict((oc) => oc.columns(['owner_id', 'id']).doUpdateSet((eb) => ({
          message_count: eb('conversations.message_count', '+', messages.length),
          updated_at: now,
        })))
        .returning('message_count')
        .executeTakeFirstOrThrow();
      const first = count - messages.length + 1;
      await trx
        .insertInto('conversation_messages')
        .values(messages.map((message, i) => ({ owner_id: ownerId, conversation_id: conversationId, seq: first + i, message: JSON.stringify(message), created_at: now })))
        .execute();
    });
  }
}
