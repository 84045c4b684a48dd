import type { Store } from '../store/port.js';

/** Opens the store a `--db` value names: a `postgres://` URL or a SQLite file path. */
export async function openStoreFromUrl(db: string, options: { sqliteSynchronous?: 'full' | 'normal'; poolSize?: number } = {}): Promise<Store> {
  if (/^postgres(ql)?:\/\//.test(db)) {
    const { openPostgresStore } = await import('../store/postgres/postgres-store.js');
    const url = new URL(db);
    const schema = url.searchParams.get('schema') ?? undefined;
    url.searchParams.delete('schema');
    return openPostgresStore({ connectionString: url.toString(), ...(schema ? { schema } : {}), ...(options.poolSize ? { poolSize: options.poolSize } : {}) });
  }
  const { openSqliteStore } = await import('../store/sqlite/sqlite-store.js');
  return openSqliteStore({ path: db, ...(options.sqliteSynchronous ? { synchronous: options.sqliteSynchronous } : {}) });
}
