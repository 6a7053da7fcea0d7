// `node --import ./scripts/typescript-loader.mjs`: runs the project's TypeScript on Node before
// 22.18 (scripts/typescript-hooks.mjs says how), with stack traces on the .ts lines.
import { register } from 'node:module';

register('./typescript-hooks.mjs', import.meta.url);
process.setSourceMapsEnabled(true);
