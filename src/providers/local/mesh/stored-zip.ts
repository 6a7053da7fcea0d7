import { crc32 } from 'node:zlib';

export interface ZipEntry {
  name: string;
  data: Buffer;
}

export interface StoredZipOptions {
  /** Each file's data starts at a multiple of this many bytes (USDZ asks for 64). */
  align: number;
}

/** Extra-field id of alignment padding (the one zipalign uses). */
const PADDING_FIELD = 0xd935;
/** 1980-01-01 00:00 in DOS format: a fixed date keeps archives byte-identical. */
const DOS_TIME = 0;
const DOS_DATE = (0 << 9) | (1 << 5) | 1;

/** What a stored entry's local and central headers both say of it. */
interface EntryFields {
  crc: number;
  size: number;
  nameLength: number;
  extraLength: number;
}

/** The run of fields the local and central headers share, from "version needed" to the extra field's length. */
function writeEntryFields(header: Buffer, at: number, fields: EntryFields): void {
  header.writeUInt16LE(20, at); // needs version 2.0
  header.writeUInt16LE(0x0800, at + 2); // names are UTF-8
  header.writeUInt16LE(0, at + 4); // stored
  header.writeUInt16LE(DOS_TIME, at + 6);
  header.writeUInt16LE(DOS_DATE, at + 8);
  header.writeUInt32LE(fields.crc, at + 10);
  header.writeUInt32LE(fields.size, at + 14); // compressed size: stored, so the same
  header.writeUInt32LE(fields.size, at + 18);
  header.writeUInt16LE(fields.nameLength, at + 22);
  header.writeUInt16LE(fields.extraLength, at + 24);
}

/**
 * A zip archive whose files are stored uncompressed, as 3MF and USDZ packages allow (USDZ
 * requires it); padding in each local header's extra field aligns the data.
 */
export function storedZip(entries: ZipEntry[], options: Partial<StoredZipOptions> = {}): Buffer {
  const align = options.align ?? 1;
  const chunks: Buffer[] = [];
  const central: Buffer[] = [];
  let offset = 0;
  for (const { name, data } of entries) {
    const fileName = Buffer.from(name, 'utf8');
    const crc = crc32(data) >>> 0;
    let padding = (align - ((offset + 30 + fileName.length) % align)) % align;
    // An extra field needs 4 bytes of header; a shorter gap takes a whole extra alignment step.
    if (padding > 0 && padding < 4) padding += align;
    const extra = Buffer.alloc(padding);
    if (padding > 0) {
      extra.writeUInt16LE(PADDING_FIELD, 0);
      extra.writeUInt16LE(padding - 4, 2);
    }
    const fields: EntryFields = { crc, size: data.length, nameLength: fileName.length, extraLength: extra.length };
    const local = Buffer.alloc(30);
    local.writeUInt32LE(0x04034b50, 0);
    writeEntryFields(local, 4, fields);
    const header = Buffer.alloc(46);
    header.writeUInt32LE(0x02014b50, 0);
    header.writeUInt16LE(20, 4); // made by version 2.0
    writeEntryFields(header, 6, fields);
    header.writeUInt32LE(offset, 42);
    central.push(header, fileName, extra);
    chunks.push(local, fileName, extra, data);
    offset += 30 + fileName.length + extra.length + data.length;
  }
  const directory = Buffer.concat(central);
  const end = Buffer.alloc(22);
  end.writeUInt32LE(0x06054b50, 0);
  end.writeUInt16LE(entries.length, 8);
  end.writeUInt16LE(entries.length, 10);
  end.writeUInt32LE(directory.length, 12);
  end.writeUInt32LE(offset, 16);
  return Buffer.concat([...chunks, directory, end]);
}
