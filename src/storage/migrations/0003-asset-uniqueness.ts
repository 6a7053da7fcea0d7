import { sql, type Kysely } from 'kysely';

/** input before output before temp, as rootTagOf picks it. */
const ROOTS_BY_PRIORITY = ['input', 'output', 'temp'] as const;

function numberedName(fileName: string, n: number): string {
  const dot = fileName.lastIndexOf('.');
  const ext = dot > 0 ? fileName.slice(dot) : '';
  const stem = ext ? fileName.slice(0, -ext.length) : fileName;
  return `${stem} (${n})${ext}`;
}

/**
 * Every live record gets a location of its own: `root` (input/output/temp, the view `type`)
 * + subfolder + file name is unique per owner. Concurrent creators of the same location then
 * conflict in the database instead of both inserting, and a preview_url built from a record's
 * location always resolves to that record.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('asset_refs').addColumn('root', 'text').execute();

  // Backfill from the tags; the highest-priority root tag is written last and wins.
  for (const root of [...ROOTS_BY_PRIORITY].reverse()) {
    await db
      .updateTable('asset_refs as r')
      .set({ root })
      .where((eb) => eb.exists(eb.selectFrom('asset_tags as t').select('t.ref_id').whereRef('t.ref_id', '=', 'r.id').where('t.tag', '=', root)))
      .execute();
  }

  // Live records sharing a location: the one /api/view served (newest) keeps the name, the
  // others are renamed `name (n).ext` to the first free number.
  const rows: { id: string; owner_id: string; root: string; subfolder: string; file_name: string }[] = await db
    .selectFrom('asset_refs')
    .select(['id', 'owner_id', 'root', 'subfolder', 'file_name'])
    .where('deleted_at', 'is', null)
    .where('root', 'is not', null)
    .orderBy('updated_at', 'desc')
    .orderBy('id', 'desc')
    .execute();
  const taken = new Map<string, Set<string>>();
  const folderOf = (r: (typeof rows)[number]) => JSON.stringify([r.owner_id, r.root, r.subfolder]);
  for (const r of rows) {
    const names = taken.get(folderOf(r)) ?? new Set<string>();
    taken.set(folderOf(r), names);
    names.add(r.file_name);
  }
  const kept = new Set<string>();
  for (const r of rows) {
    const key = JSON.stringify([r.owner_id, r.root, r.subfolder, r.file_name]);
    if (!kept.has(key)) {
      kept.add(key);
      continue;
    }
    const names = taken.get(folderOf(r))!;
    let n = 1;
    while (names.has(numberedName(r.file_name, n))) n++;
    const fileName = numberedName(r.file_name, n);
    names.add(fileName);
    await db.updateTable('asset_refs').set({ file_name: fileName }).where('id', '=', r.id).execute();
  }

  await db.schema
    .createIndex('asset_refs_live_location')
    .unique()
    .on('asset_refs')
    .columns(['owner_id', 'root', 'subfolder', 'file_name'])
    .where(sql.ref('deleted_at'), 'is', null)
    .execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropIndex('asset_refs_live_location').execute();
  await db.schema.alterTable('asset_refs').dropColumn('root').execute();
}
