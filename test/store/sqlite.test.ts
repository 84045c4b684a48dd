import Database from 'better-sqlite3';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { defineStoreContract } from '../contract/store-contract.js';
import { openSqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import { storesUnderTest } from '../helpers/stores.js';

const dirs: string[] = [];
let current: string | null = null;

if (storesUnderTest().includes('sqlite')) {
  defineStoreContract({
    name: 'sqlite',
    async open(shared) {
      if (!current || !shared) {
        if (!shared || !current) {
          current = mkdtempSync(join(tmpdir(), 'belay-sqlite-'));
          dirs.push(current);
        }
      }
      return openSqliteStore({ path: join(current, shared ? `${shared}.db` : 'store.db'), pollMs: 20 });
    },
    async cleanup() {
      for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
      current = null;
    },
    async rawPendingInput(taskId) {
      const db = new Database(join(current!, 'store.db'), { readonly: true });
      try {
        const row = db.prepare('SELECT pending_input AS p FROM belay_tasks WHERE id = ?').get(taskId) as { p: string | null } | undefined;
        return row?.p ?? null;
      } finally {
        db.close();
      }
    },
  });
}
