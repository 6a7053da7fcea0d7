// Runs every benchmark script in bench/ one after another, each in its own process.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';

const only = process.argv.slice(2);
const scripts = fs.readdirSync('bench')
  .filter((f) => f.endsWith('.ts') && f !== 'run.ts' && f !== 'support.ts')
  .filter((f) => only.length === 0 || only.some((name) => f.startsWith(name)))
  .sort();
let failed = 0;
for (const script of scripts) {
  const result = spawnSync(process.execPath, ['--import', 'tsx', `bench/${script}`], { stdio: 'inherit' });
  if (result.status !== 0) {
    failed++;
    process.stderr.write(`bench/${script} failed (exit ${result.status})\n`);
  }
}
process.exitCode = failed ? 1 : 0;
