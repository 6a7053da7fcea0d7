import { CompiledQuery, sql, type Expression, type ExpressionBuilder, type QueryCreator, type SqlBool, type Transaction } from 'kysely';
import type { DbHandle } from '../db-handle.ts';
import { insertOf, insertsInto } from './inserts-into.ts';
import type { AssetContentRow, AssetMetaRow, AssetRefRow, AssetTagRow, Database } from '../schema.ts';
import { metaValueOf } from '../meta-value.ts';

const MISSING = 'missing';
/** Keeps `IN (…)` lists well under the parameter limits of both dialects. */
const CHUNK = 500;

/** Which live records of one owner a listing, a histogram or a tag count looks at. */
export interface AssetFilter {
  ownerId: string;
  /** Every one of these tags. */
  includeTags: string[];
  /** None of these tags. */
  excludeTags: string[];
  /** Case-insensitive substring of the name. */
  nameContains?: string;
  /** Equality on the merged metadata rows; null means the key is absent, an array any of its values. */
  metadataFilter?: Record<string, unknown>;
}

export type AssetSort = 'name' | 'created_at' | 'updated_at' | 'size';
export type TagOrder = 'count_desc' | 'name_asc';

export interface TagCount {
  name: string;
  count: number;
}

type RefPatch = Partial<Omit<AssetRefRow, 'id' | 'owner_id' | 'created_at'>>;

function chunks<T>(items: readonly T[]): T[][] {
  const out: T[][] = [];
  for (let i = 0; i < items.length; i += CHUNK) out.push(items.slice(i, i + CHUNK));
  return out;
}

function likePattern(text: string): string {
  return text.replace(/[\\%_]/g, (c) => `\\${c}`);
}

/* eslint-disable @typescript-eslint/no-explicit-any -- the filter is shared by queries with different joins */
type AnyEb = ExpressionBuilder<any, any>;

function hasTag(eb: AnyEb, tag: string): Expression<SqlBool> {
  return eb.exists(eb.selectFrom('asset_tags as ht').select('ht.ref_id').whereRef('ht.ref_id', '=', 'r.id').where('ht.tag', '=', tag));
}

function metaMatches(eb: AnyEb, key: string, value: unknown): Expression<SqlBool> {
  const v = metaValueOf(value);
  let q = eb.selectFrom('asset_meta as m').select('m.ref_id').whereRef('m.ref_id', '=', 'r.id').where('m.key', '=', key);
  if (v.val_str !== null) q = q.where('m.val_str', '=', v.val_str);
  else if (v.val_num !== null) q = q.where('m.val_num', '=', v.val_num);
  else if (v.val_bool !== null) q = q.where('m.val_bool', '=', v.val_bool);
  else q = q.where('m.val_json', '=', v.val_json);
  return eb.exists(q);
}

/** The WHERE of a filter over `asset_refs as r`. */
function filterExpr(eb: AnyEb, f: AssetFilter, excludeMissing: boolean): Expression<SqlBool> {
  const conds: Expression<SqlBool>[] = [eb('r.owner_id', '=', f.ownerId), eb('r.deleted_at', 'is', null)];
  for (const tag of f.includeTags) conds.push(hasTag(eb, tag));
  if (f.excludeTags.length > 0) {
    conds.push(eb.not(eb.exists(eb.selectFrom('asset_tags as xt').select('xt.ref_id').whereRef('xt.ref_id', '=', 'r.id').where('xt.tag', 'in', f.excludeTags))));
  }
  if (excludeMissing) conds.push(eb.not(hasTag(eb, MISSING)));
  if (f.nameContains) {
    conds.push(sql<SqlBool>`lower(${eb.ref('r.name')}) like ${`%${likePattern(f.nameContains.toLowerCase())}%`} escape '\\'`);
  }
  for (const [key, value] of Object.entries(f.metadataFilter ?? {})) {
    if (value === null || value === undefined) {
      conds.push(eb.not(eb.exists(eb.selectFrom('asset_meta as mk').select('mk.ref_id').whereRef('mk.ref_id', '=', 'r.id').where('mk.key', '=', key))));
    } else if (Array.isArray(value)) {
      const options = value.filter((v) => v !== null && v !== undefined).map((v) => metaMatches(eb, key, v));
      conds.push(options.length > 0 ? eb.or(options) : sql<SqlBool>`1 = 0`);
    } else {
      conds.push(metaMatches(eb, key, value));
    }
  }
  return eb.and(conds);
}

/** The insert of a content row, once per hash: a second writer of the same hash changes nothing. */
function insertContent(db: QueryCreator<Database>, row: AssetContentRow) {
  return db.insertInto('asset_contents').values(row).onConflict((oc) => oc.column('hash').doNothing());
}

/** All SQL of the asset registry. */
export class AssetsRepo {
  private readonly db: DbHandle;

  constructor(db: DbHandle) {
    this.db = db;
  }

  private get k() {
    return this.db.kysely;
  }

  /** The same queries through `db`, a transaction in progress. */
  in(db: DbHandle): AssetsRepo {
    return new AssetsRepo(db);
  }

  /** Runs `work` in a transaction: a new one, or the one this repository already writes through. */
  async transaction<T>(work: (repo: AssetsRepo) => Promise<T>): Promise<T> {
    return this.atomically((trx) => work(this.in({ kysely: trx, dialect: this.db.dialect })));
  }

  private async atomically<T>(work: (trx: Transaction<Database>) => Promise<T>): Promise<T> {
    // Kysely has no nested transactions: inside one, the statements simply join it.
    return this.k.isTransaction ? work(this.k as Transaction<Database>) : this.k.transaction().execute(work);
  }

  /** Whether a content row exists for the hash. */
  async hasContent(hash: string): Promise<boolean> {
    return (await this.k.selectFrom('asset_contents').select('hash').where('hash', '=', hash).executeTakeFirst()) !== undefined;
  }

  /** Records content once per hash; a second writer of the same hash changes nothing. */
  async upsertContent(row: AssetContentRow): Promise<void> {
    await insertContent(this.k, row).execute();
  }

  /** Up to `limit` content hashes after `after` in hash order (from the first without it): one batch of a walk over every content. */
  async contentHashesAfter(after: string | undefined, limit: number): Promise<string[]> {
    const rows = await this.k
      .selectFrom('asset_contents')
      .select('hash')
      .$if(after !== undefined, (qb) => qb.where('hash', '>', after!))
      .orderBy('hash')
      .limit(limit)
      .execute();
    return rows.map((r) => r.hash);
  }

  /** The recorded byte count of a content. */
  async contentSize(hash: string): Promise<number | undefined> {
    const row = await this.k.selectFrom('asset_contents').select('size').where('hash', '=', hash).executeTakeFirst();
    return row === undefined ? undefined : Number(row.size);
  }

  /**
   * Deletes the content row of a hash no record (live or deleted) refers to; answers whether
   * it was deleted, i.e. whether its bytes may go too.
   */
  async deleteUnreferencedContent(hash: string): Promise<boolean> {
    const res = await this.k
      .deleteFrom('asset_contents')
      .where('hash', '=', hash)
      .where((eb) => eb.not(eb.exists(eb.selectFrom('asset_refs').select('id').where('asset_hash', '=', hash))))
      .executeTakeFirst();
    return Number(res.numDeletedRows) > 0;
  }

  /**
   * Inserts a record with its tags and metadata rows in one transaction. Answers false (and
   * writes no record) when another live record of the owner already holds its location. With
   * `content`, the content row the record refers to is recorded too (once per hash, as
   * upsertContent), taken or not: on PostgreSQL in the record's own statement, a round trip less
   * for each task's output.
   */
  async insertRef(row: AssetRefRow, tags: readonly Omit<AssetTagRow, 'ref_id'>[], meta: readonly AssetMetaRow[], content?: AssetContentRow): Promise<boolean> {
    return this.atomically(async (trx) => {
      const postgres = this.db.dialect === 'postgres';
      if (content && !postgres) await insertContent(trx, content).execute();
      // Written here rather than by Kysely's builder, which made and compiled a node per value: a
      // task's output is one such record. A statement's foreign keys are checked at its end, once
      // the content row of its WITH is in.
      const contentInsert = content && postgres ? insertOf('asset_contents', [content], true, 1) : undefined;
      const refInsert = insertOf('asset_refs', [row], postgres, (contentInsert?.parameters.length ?? 0) + 1);
      const text = `${contentInsert ? `with "content" as (${contentInsert.text} on conflict ("hash") do nothing) ` : ''}${refInsert.text} on conflict do nothing returning "id"`;
      const { rows: inserted } = await trx.executeQuery(CompiledQuery.raw(text, [...(contentInsert?.parameters ?? []), ...refInsert.parameters]));
      if (inserted.length === 0) return false;
      const tagRows = tags.map((t) => ({ ...t, ref_id: row.id }));
      // In a batched transaction (a task's end) they wait for its end, to go in one insert with the other works' rows.
      if (this.db.tail) {
        this.db.tail.append(insertTags, tagRows);
        this.db.tail.append(insertMeta, meta);
        return true;
      }
      if (tagRows.length > 0) await trx.insertInto('asset_tags').values(tagRows).execute();
      if (meta.length > 0) await trx.insertInto('asset_meta').values([...meta]).execute();
      return true;
    });
  }

  /** Changes columns of a record; with meta, its metadata rows are replaced too. */
  async updateRef(id: string, patch: RefPatch, meta?: readonly AssetMetaRow[]): Promise<void> {
    await this.atomically(async (trx) => {
      if (Object.keys(patch).length > 0) await trx.updateTable('asset_refs').set(patch).where('id', '=', id).execute();
      if (meta) {
        await trx.deleteFrom('asset_meta').where('ref_id', '=', id).execute();
        if (meta.length > 0) await trx.insertInto('asset_meta').values([...meta]).execute();
      }
    });
  }

  /** A live (not deleted) record of the owner. */
  async findLive(ownerId: string, id: string): Promise<AssetRefRow | undefined> {
    return this.k.selectFrom('asset_refs').selectAll().where('id', '=', id).where('owner_id', '=', ownerId).where('deleted_at', 'is', null).executeTakeFirst();
  }

  async findLiveMany(ownerId: string, ids: readonly string[]): Promise<AssetRefRow[]> {
    const out: AssetRefRow[] = [];
    for (const part of chunks([...new Set(ids)])) {
      out.push(...(await this.k.selectFrom('asset_refs').selectAll().where('id', 'in', part).where('owner_id', '=', ownerId).where('deleted_at', 'is', null).execute()));
    }
    return out;
  }

  /** Whether the owner has a live record of that content; with `present`, one not tagged missing. */
  async ownerHasHash(ownerId: string, hash: string, opts: { present?: boolean } = {}): Promise<boolean> {
    const row = await this.k
      .selectFrom('asset_refs as r')
      .select('r.id')
      .where('r.owner_id', '=', ownerId)
      .where('r.asset_hash', '=', hash)
      .where('r.deleted_at', 'is', null)
      .$if(opts.present === true, (qb) => qb.where((eb) => eb.not(hasTag(eb, MISSING))))
      .limit(1)
      .executeTakeFirst();
    return row !== undefined;
  }

  async findLiveByHashAndName(ownerId: string, hash: string, name: string): Promise<AssetRefRow | undefined> {
    return this.k
      .selectFrom('asset_refs')
      .selectAll()
      .where('owner_id', '=', ownerId)
      .where('asset_hash', '=', hash)
      .where('name', '=', name)
      .where('deleted_at', 'is', null)
      .orderBy('created_at')
      .orderBy('id')
      .limit(1)
      .executeTakeFirst();
  }

  /** The newest live record of the owner with that content, skipping records with any of the tags. */
  async findNewestByHash(ownerId: string, hash: string, withoutTags: readonly string[]): Promise<AssetRefRow | undefined> {
    return this.k
      .selectFrom('asset_refs as r')
      .selectAll('r')
      .where('r.owner_id', '=', ownerId)
      .where('r.asset_hash', '=', hash)
      .where('r.deleted_at', 'is', null)
      .$if(withoutTags.length > 0, (qb) =>
        qb.where((eb) => eb.not(eb.exists(eb.selectFrom('asset_tags as t').select('t.ref_id').whereRef('t.ref_id', '=', 'r.id').where('t.tag', 'in', [...withoutTags])))),
      )
      .orderBy('r.updated_at', 'desc')
      .orderBy('r.id', 'desc')
      .limit(1)
      .executeTakeFirst();
  }

  /** The live record of the owner that holds root + subfolder + file name (at most one). */
  async findOccupant(ownerId: string, root: string, subfolder: string, fileName: string): Promise<AssetRefRow | undefined> {
    return this.k
      .selectFrom('asset_refs')
      .selectAll()
      .where('owner_id', '=', ownerId)
      .where('root', '=', root)
      .where('subfolder', '=', subfolder)
      .where('file_name', '=', fileName)
      .where('deleted_at', 'is', null)
      .executeTakeFirst();
  }

  /**
   * The longest live names of the owner in root/subfolder that start `stem (` and end with `ext`,
   * longest and then last first: the numbered names `stem (n)ext` with the highest n among them.
   */
  async longestNumberedNames(ownerId: string, root: string, subfolder: string, stem: string, ext: string, limit: number): Promise<string[]> {
    const rows = await this.k
      .selectFrom('asset_refs')
      .select('file_name')
      .where('owner_id', '=', ownerId)
      .where('root', '=', root)
      .where('subfolder', '=', subfolder)
      .where('deleted_at', 'is', null)
      // A range over the location index: every name starting `stem (` (the next character is `)`).
      .where('file_name', '>=', `${stem} (`)
      .where('file_name', '<', `${stem} )`)
      .where(sql<string>`substr(file_name, length(file_name) - ${ext.length})`, '=', `)${ext}`)
      .orderBy(sql`length(file_name)`, 'desc')
      .orderBy('file_name', 'desc')
      .limit(limit)
      .execute();
    return rows.map((r) => r.file_name);
  }

  /**
   * The live record of the owner at file name + subfolder carrying the root tag
   * (input/output/temp): the one whose location root it is first, else the newest.
   */
  async findAtLocation(ownerId: string, fileName: string, subfolder: string, rootTag: string): Promise<AssetRefRow | undefined> {
    return this.k
      .selectFrom('asset_refs as r')
      .selectAll('r')
      .where('r.owner_id', '=', ownerId)
      .where('r.file_name', '=', fileName)
      .where('r.subfolder', '=', subfolder)
      .where('r.deleted_at', 'is', null)
      .where((eb) => hasTag(eb, rootTag))
      .orderBy(sql`case when r.root = ${rootTag} then 0 else 1 end`)
      .orderBy('r.updated_at', 'desc')
      .orderBy('r.id', 'desc')
      .limit(1)
      .executeTakeFirst();
  }

  /**
   * Deletes, for good, the records a task's output of `hash` made (job_id = the task), live or
   * deleted, with their tags and metadata; previews that pointed at them are cleared.
   */
  async deleteOutputRecords(ownerId: string, jobId: string, hash: string): Promise<void> {
    await this.atomically(async (trx) => {
      const ids = (await trx.selectFrom('asset_refs').select('id').where('owner_id', '=', ownerId).where('job_id', '=', jobId).where('asset_hash', '=', hash).execute()).map((r) => r.id);
      if (ids.length === 0) return;
      await trx.updateTable('asset_refs').set({ preview_id: null }).where('owner_id', '=', ownerId).where('preview_id', 'in', ids).execute();
      await trx.deleteFrom('asset_tags').where('ref_id', 'in', ids).execute();
      await trx.deleteFrom('asset_meta').where('ref_id', 'in', ids).execute();
      await trx.deleteFrom('asset_refs').where('id', 'in', ids).execute();
    });
  }

  /** Soft delete; previews of the owner's records that pointed at it are cleared. False when not live. */
  async softDelete(ownerId: string, id: string, now: number): Promise<boolean> {
    return this.atomically(async (trx) => {
      const res = await trx.updateTable('asset_refs').set({ deleted_at: now, updated_at: now }).where('id', '=', id).where('owner_id', '=', ownerId).where('deleted_at', 'is', null).executeTakeFirst();
      if (Number(res.numUpdatedRows) === 0) return false;
      await trx.updateTable('asset_refs').set({ preview_id: null }).where('owner_id', '=', ownerId).where('preview_id', '=', id).execute();
      return true;
    });
  }

  /** Tags of the records, by record id. */
  async tagsOf(ids: readonly string[]): Promise<Map<string, string[]>> {
    const out = new Map<string, string[]>();
    for (const id of ids) out.set(id, []);
    for (const part of chunks([...new Set(ids)])) {
      const rows = await this.k.selectFrom('asset_tags').select(['ref_id', 'tag']).where('ref_id', 'in', part).execute();
      for (const row of rows) out.get(row.ref_id)?.push(row.tag);
    }
    return out;
  }

  /** Adds the tags a record does not have yet; answers those added. */
  async addTags(refId: string, tags: readonly string[], origin: AssetTagRow['origin'], now: number): Promise<string[]> {
    if (tags.length === 0) return [];
    return this.atomically(async (trx) => {
      const present = new Set((await trx.selectFrom('asset_tags').select('tag').where('ref_id', '=', refId).where('tag', 'in', [...tags]).execute()).map((r) => r.tag));
      const added = tags.filter((t) => !present.has(t));
      if (added.length > 0) {
        await trx.insertInto('asset_tags').values(added.map((tag) => ({ ref_id: refId, tag, origin, added_at: now }))).onConflict((oc) => oc.columns(['ref_id', 'tag']).doNothing()).execute();
      }
      return added;
    });
  }

  /** Removes the tags a record has; answers those removed. */
  async removeTags(refId: string, tags: readonly string[]): Promise<string[]> {
    if (tags.length === 0) return [];
    const rows = await this.k.deleteFrom('asset_tags').where('ref_id', '=', refId).where('tag', 'in', [...tags]).returning('tag').execute();
    return rows.map((r) => r.tag);
  }

  /** One page of live records matching the filter (records whose content is missing are left out unless asked for by tag). */
  async list(f: AssetFilter, page: { limit: number; offset: number; sort: AssetSort; order: 'asc' | 'desc' }): Promise<{ rows: AssetRefRow[]; total: number }> {
    const excludeMissing = !f.includeTags.includes(MISSING);
    const base = this.k.selectFrom('asset_refs as r').where((eb) => filterExpr(eb, f, excludeMissing));
    const counted = await base.select((eb) => eb.fn.countAll<number>().as('n')).executeTakeFirstOrThrow();
    const rows = await base
      .selectAll('r')
      .orderBy(`r.${page.sort}`, page.order)
      .orderBy('r.id', page.order)
      .limit(page.limit)
      .offset(page.offset)
      .execute();
    return { rows, total: Number(counted.n) };
  }

  /**
   * Tag usage over the live records matching the filter: records whose content is missing count
   * only towards `missing` (rule 6).
   */
  async tagCounts(f: AssetFilter, opts: { prefix?: string; order: TagOrder; limit: number; offset: number }): Promise<{ rows: TagCount[]; total: number }> {
    const filtered = this.k.selectFrom('asset_refs as r').select('r.id').where((eb) => filterExpr(eb, f, false));
    const missingRefs = this.k.selectFrom('asset_tags as mt').select('mt.ref_id').where('mt.tag', '=', MISSING);
    const counted = this.k
      .selectFrom('asset_tags as t')
      .where('t.ref_id', 'in', filtered)
      .where((eb) => eb.or([eb('t.tag', '=', MISSING), eb('t.ref_id', 'not in', missingRefs)]))
      .$if(Boolean(opts.prefix), (qb) => qb.where(sql<SqlBool>`t.tag like ${`${likePattern(opts.prefix!)}%`} escape '\\'`))
      .select((eb) => ['t.tag as name', eb.fn.countAll<number>().as('count')])
      .groupBy('t.tag');
    const total = await this.k.selectFrom(counted.as('c')).select((eb) => eb.fn.countAll<number>().as('n')).executeTakeFirstOrThrow();
    let ordered = counted;
    ordered = opts.order === 'count_desc' ? ordered.orderBy('count', 'desc').orderBy('name', 'asc') : ordered.orderBy('name', 'asc');
    const rows = await ordered.limit(opts.limit).offset(opts.offset).execute();
    return { rows: rows.map((r) => ({ name: r.name, count: Number(r.count) })), total: Number(total.n) };
  }

  /**
   * Marks (or clears) the automatic `missing` tag on every record of the given contents, all
   * owners included: the bytes are shared. Answers how many records changed.
   */
  async setMissing(hashes: readonly string[], missing: boolean, now: number): Promise<number> {
    let changed = 0;
    for (const part of chunks([...new Set(hashes)])) {
      if (missing) {
        const ids = await this.k
          .selectFrom('asset_refs as r')
          .select('r.id')
          .where('r.asset_hash', 'in', part)
          .where((eb) => eb.not(hasTag(eb, MISSING)))
          .execute();
        if (ids.length === 0) continue;
        await this.k
          .insertInto('asset_tags')
          .values(ids.map((r) => ({ ref_id: r.id, tag: MISSING, origin: 'automatic' as const, added_at: now })))
          .onConflict((oc) => oc.columns(['ref_id', 'tag']).doNothing())
          .execute();
        changed += ids.length;
      } else {
        const res = await this.k
          .deleteFrom('asset_tags')
          .where('tag', '=', MISSING)
          .where('ref_id', 'in', this.k.selectFrom('asset_refs').select('id').where('asset_hash', 'in', part))
          .executeTakeFirst();
        changed += Number(res.numDeletedRows);
      }
    }
    return changed;
  }

  /** Distinct content hashes of records tagged missing; callers narrow it further. */
  private missingHashes() {
    return this.k
      .selectFrom('asset_refs as r')
      .innerJoin('asset_tags as t', 't.ref_id', 'r.id')
      .select('r.asset_hash')
      .distinct()
      .where('t.tag', '=', MISSING);
  }

  /** Which of the hashes have records currently marked missing. */
  async hashesMarkedMissing(hashes: readonly string[]): Promise<Set<string>> {
    const out = new Set<string>();
    for (const part of chunks([...new Set(hashes)])) {
      for (const row of await this.missingHashes().where('r.asset_hash', 'in', part).execute()) out.add(row.asset_hash);
    }
    return out;
  }
}

const insertTags = insertsInto('asset_tags');
const insertMeta = insertsInto('asset_meta');
