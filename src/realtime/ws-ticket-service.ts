import type { Logger } from 'pino';
import { hashToken } from '../auth/tokens.ts';
import { newSecret } from '../core/ids.ts';
import type { WsTicketsRepo } from '../storage/repos/ws-tickets-repo.ts';

/** How long a ticket can be presented, in seconds (`expires_in: 60`). */
export const WS_TICKET_TTL_S = 60;
const TICKET_PREFIX = 'wst-';
/** Expired tickets are swept at most this often, on the way of issuing new ones. */
const SWEEP_INTERVAL_MS = 60_000;

export interface IssuedTicket {
  ticket: string;
  expires_in: number;
}

/**
 * Single-use realtime tickets: a client that cannot hold its API token in a browser trades it
 * over HTTP for a short-lived ticket it presents in session.authenticate. Only the ticket's
 * sha256 is stored, in the database every instance shares.
 */
export class WsTicketService {
  private nextSweepAt = 0;

  private readonly repo: WsTicketsRepo;
  private readonly opts: { logger: Logger; now?: () => number };

  constructor(
    repo: WsTicketsRepo,
    opts: { logger: Logger; now?: () => number },
  ) {
    this.repo = repo;
    this.opts = opts;
  }

  private now(): number {
    return (this.opts.now ?? Date.now)();
  }

  async issue(userId: string, tokenId: string): Promise<IssuedTicket> {
    const now = this.now();
    if (now >= this.nextSweepAt) {
      this.nextSweepAt = now + SWEEP_INTERVAL_MS;
      this.repo.deleteExpired(now).catch((err: unknown) => this.opts.logger.warn({ err }, 'sweeping expired realtime tickets failed'));
    }
    const ticket = TICKET_PREFIX + newSecret();
    await this.repo.insert({ ticket_hash: hashToken(ticket), user_id: userId, token_id: tokenId, expires_at: now + WS_TICKET_TTL_S * 1000 });
    return { ticket, expires_in: WS_TICKET_TTL_S };
  }

  /** Who a ticket was issued to, using it up; undefined when unknown, already used or expired. */
  async redeem(ticket: string): Promise<{ userId: string; tokenId: string } | undefined> {
    const row = await this.repo.take(hashToken(ticket));
    return row && row.expires_at > this.now() ? { userId: row.user_id, tokenId: row.token_id } : undefined;
  }
}
