import type { TagCount, TagOrder } from '../storage/repos/assets-repo.ts';
import type { AssetContext } from './asset-context.ts';
import { assetFilterOf, type AssetRecords, type RecordFilter } from './asset-records.ts';
import { assertNoSystemTags, sortTags } from './asset-tags.ts';

/**
 * Tags of the owner's records: adding and removing them on one record, and counting them. A
 * record whose content is missing counts only towards `missing`.
 */
export class AssetTagging {
  private readonly ctx: AssetContext;
  private readonly records: AssetRecords;

  constructor(
    ctx: AssetContext,
    records: AssetRecords,
  ) {
    this.ctx = ctx;
    this.records = records;
  }

  async add(ownerId: string, id: string, tags: string[]): Promise<{ added: string[]; already_present: string[]; total_tags: string[] }> {
    assertNoSystemTags(tags);
    const row = await this.records.liveRow(ownerId, id);
    const now = this.ctx.now();
    const added = await this.ctx.repo.addTags(row.id, tags, 'manual', now);
    if (added.length > 0) await this.ctx.repo.updateRef(row.id, { updated_at: now });
    const all = (await this.ctx.repo.tagsOf([row.id])).get(row.id) ?? [];
    return { added: sortTags(added), already_present: sortTags(tags.filter((t) => !added.includes(t))), total_tags: sortTags(all) };
  }

  async remove(ownerId: string, id: string, tags: string[]): Promise<{ removed: string[]; not_present: string[]; total_tags: string[] }> {
    assertNoSystemTags(tags);
    const row = await this.records.liveRow(ownerId, id);
    const removed = await this.ctx.repo.removeTags(row.id, tags);
    if (removed.length > 0) await this.ctx.repo.updateRef(row.id, { updated_at: this.ctx.now() });
    const all = (await this.ctx.repo.tagsOf([row.id])).get(row.id) ?? [];
    return { removed: sortTags(removed), not_present: sortTags(tags.filter((t) => !removed.includes(t))), total_tags: sortTags(all) };
  }

  /** GET /api/tags: tag usage over the owner's live records. */
  async list(ownerId: string, q: { prefix?: string; limit: number; offset: number; order: TagOrder }): Promise<{ tags: TagCount[]; total: number; has_more: boolean }> {
    const prefix = q.prefix?.trim().toLowerCase() || undefined;
    const { rows, total } = await this.ctx.repo.tagCounts({ ownerId, includeTags: [], excludeTags: [] }, { prefix, order: q.order, limit: q.limit, offset: q.offset });
    return { tags: rows, total, has_more: q.offset + rows.length < total };
  }

  /** GET /api/assets/tags/refine: tag histogram over the records a listing with these filters would look at. */
  async refine(ownerId: string, q: RecordFilter & { limit: number }): Promise<Record<string, number>> {
    const { rows } = await this.ctx.repo.tagCounts(assetFilterOf(ownerId, q), { order: 'count_desc', limit: q.limit, offset: 0 });
    return Object.fromEntries(rows.filter((r) => r.count > 0).map((r) => [r.name, r.count]));
  }
}
