import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { describe, expect, it } from 'vitest';
import { planMigrations } from '../../src/store/migration.js';
import { POSTGRES_MIGRATIONS } from '../../src/store/postgres/migrations.js';
import { SQLITE_MIGRATIONS } from '../../src/store/sqlite/migrations.js';
import { openSqliteStore } from '../../src/store/sqlite/sqlite-store.js';

describe('migrations', () => {
  it('pair up across the two dialects: same versions, names and breaking markers', () => {
    const shape = (ms: typeof SQLITE_MIGRATIONS) => ms.map((m) => [m.version, m.name, m.breaking]);
    expect(shape(POSTGRES_MIGRATIONS)).toEqual(shape(SQLITE_MIGRATIONS));
    const versions = SQLITE_MIGRATIONS.map((m) => m.version);
    expect(versions).toEqual(Array.from({ length: versions.length }, (_, i) => i + 1));
  });

  it('plans only what is missing and refuses a database with a newer breaking migration', () => {
    expect(planMigrations(SQLITE_MIGRATIONS, [{ version: 1, breaking: true }]).map((m) => m.version)).toEqual(SQLITE_MIGRATIONS.slice(1).map((m) => m.version));
    // A newer non-breaking migration (added columns, say) leaves older code able to run.
    expect(() => planMigrations(SQLITE_MIGRATIONS, [...SQLITE_MIGRATIONS.map((m) => ({ version: m.version, breaking: m.breaking })), { version: 999, breaking: false }])).not.toThrow();
    expect(() => planMigrations(SQLITE_MIGRATIONS, [{ version: 999, breaking: true }])).toThrow(expect.objectContaining({ code: 'SCHEMA_TOO_NEW' }));
  });

  it('SQLite: opening is idempotent and a schema from newer code is refused', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'belay-mig-'));
    try {
      const path = join(dir, 'db.sqlite');
      const a = await openSqliteStore({ path });
      const b = await openSqliteStore({ path });
      expect(await b.schemaVersion()).toBe(SQLITE_MIGRATIONS.length);
      await a.close();
      await b.close();
      const raw = new Database(path);
      raw.prepare('INSERT INTO belay_schema_migrations (version, name, breaking, applied_at) VALUES (999, ?, 1, 0)').run('from-the-future');
      raw.close();
      await expect(openSqliteStore({ path })).rejects.toMatchObject({ code: 'SCHEMA_TOO_NEW' });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
