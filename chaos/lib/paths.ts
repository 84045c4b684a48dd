/** Where the repository is, wherever the compiled harness runs from (it is built under node_modules/.cache). */
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

function findRoot(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  for (;;) {
    if (existsSync(join(dir, 'bin', 'belay.js')) && existsSync(join(dir, 'package.json'))) return dir;
    const up = dirname(dir);
    if (up === dir) throw new Error('chaos: cannot find the repository root (bin/belay.js) above the harness');
    dir = up;
  }
}

export const REPO_ROOT = findRoot();
export const BELAY_BIN = join(REPO_ROOT, 'bin', 'belay.js');
export const REGRESSIONS_DIR = join(REPO_ROOT, 'test', 'regressions');
