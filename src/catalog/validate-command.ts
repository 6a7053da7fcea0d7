/** `gengate catalog validate FILE`: exit status 0 when valid, 1 with one line per problem otherwise. */
import { CatalogError, readCatalogFile, type CatalogDocument } from './catalog.ts';
import { validateCatalog } from './schema.ts';

export function runCatalogValidate(file: string, out: (line: string) => void): number {
  let data: unknown;
  try {
    data = readCatalogFile(file);
  } catch (err) {
    if (!(err instanceof CatalogError)) throw err;
    for (const line of err.lines) out(line);
    return 1;
  }
  const lines = validateCatalog(data);
  if (lines.length > 0) {
    for (const line of lines) out(line);
    return 1;
  }
  const catalog = data as CatalogDocument;
  out(`${file}: valid (${catalog.providers.length} providers, ${catalog.baseModels.length} models)`);
  return 0;
}
