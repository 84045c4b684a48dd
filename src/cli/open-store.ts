import type { Store } from '../store/port.js';

export interface OpenStoreOptions {
  sqliteSynchronous?: 'full' | 'normal';
  poolSize?: number;
  /** PostgreSQL: `lazy` opens no LISTEN connection for tools that never subscribe (doctor, migrate). */
  listen?: 'eager' | 'lazy';
}

/** Opens the store a `--db` value names: a `postgres://` URL or a SQLite file path. */
export async function openStoreFromUrl(db: string, options: OpenStoreOptions = {}): Promise<Store> {
  if (/^postgres(ql)?:\/\//.test(db)) {
    const { openPostgresStore } = await import('../store/postgres/postgres-store.js');
    const url = new URL(db);
    const schema = url.searchParams.get('schema') ?? undefined;
    url.searchParams.delete('schema');
    return openPostgresStore({
      connectionString: url.toString(),
      ...(schema ? { schema } : {}),
      ...(options.poolSize ? { poolSize: options.poolSize } : {}),
      ...(options.listen ? { listen: options.listen } : {}),
    });
  }
  const { openSqliteStore } = await import('../store/sqlite/sqlite-store.js');
  return openSqliteStore({ path: db, ...(options.sqliteSynchronous ? { synchronous: options.sqliteSynchronous } : {}) });
}
