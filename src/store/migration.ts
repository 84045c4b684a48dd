/**
 * @module store/migration
 * Forward-only migrations. Each dialect has its own list; version numbers pair up across the two (a test checks
 * it). A migration marked `breaking` means older code must not run against the schema: code refuses to start
 * when the database has a breaking migration newer than anything it knows (graphile-worker's rule).
 */
import { BelayError } from '../core/errors.js';

export interface Migration {
  version: number;
  name: string;
  breaking: boolean;
  sql: string;
}

export interface AppliedMigration {
  version: number;
  breaking: boolean;
}

/** Returns the migrations still to apply, or throws SCHEMA_TOO_NEW when the database is ahead of the code. */
export function planMigrations(known: readonly Migration[], applied: readonly AppliedMigration[]): Migration[] {
  const codeMax = Math.max(0, ...known.map((m) => m.version));
  const newerBreaking = applied.filter((a) => a.version > codeMax && a.breaking);
  if (newerBreaking.length > 0) {
    throw new BelayError(
      'SCHEMA_TOO_NEW',
      `The database schema is at breaking version ${Math.max(...newerBreaking.map((a) => a.version))}, newer than this code (${codeMax}); upgrade Belay`,
      { details: { database_version: Math.max(...applied.map((a) => a.version)), code_version: codeMax } },
    );
  }
  const done = new Set(applied.map((a) => a.version));
  return [...known].sort((a, b) => a.version - b.version).filter((m) => !done.has(m.version));
}
