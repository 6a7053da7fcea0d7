import type { Db } from '../db.ts';
import type { WsTicketRow } from '../schema.ts';

/** SQL for single-use realtime tickets. */
export class WsTicketsRepo {
  private readonly db: Db;

  constructor(db: Db) {
    this.db = db;
  }

  async insert(row: WsTicketRow): Promise<void> {
    await this.db.kysely.insertInto('ws_tickets').values(row).execute();
  }

  /**
   * Removes the ticket and answers what it was, in one statement: of two sessions presenting
   * the same ticket at once (on any instance), only one gets the row back.
   */
  async take(ticketHash: string): Promise<WsTicketRow | undefined> {
    return this.db.kysely.deleteFrom('ws_tickets').where('ticket_hash', '=', ticketHash).returningAll().executeTakeFirst();
  }

  /** Deletes tickets that expired unused; answers how many. */
  async deleteExpired(now: number): Promise<number> {
    const result = await this.db.kysely.deleteFrom('ws_tickets').where('expires_at', '<=', now).executeTakeFirst();
    return Number(result.numDeletedRows);
  }
}
