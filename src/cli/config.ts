/**
 * @module cli/config
 * The CLI's settings, each resolved in one order: command-line flag, then environment variable, then the config
 * file, then the default. The config file is `--config <path>`, else `BELAY_CONFIG`, else `.belay/config.json` in the
 * working directory when it exists. Bad values fail with a message naming the value, where it came from and what
 * is allowed; nothing is guessed.
 */
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { parseArgs, type ParseArgsConfig } from 'node:util';
import { z } from 'zod';

/** A mistake in how the command was called or configured: printed with a hint, exit code 2. */
export class UsageError extends Error {
  constructor(
    message: string,
    readonly usage?: string,
  ) {
    super(message);
    this.name = 'UsageError';
  }
}

export const DEFAULT_URL = 'http://127.0.0.1:8787';
export const DEFAULT_DB = '.belay/belay.db';
export const DEFAULT_CONFIG_FILE = '.belay/config.json';

const port = z.number().int().min(0).max(65535);
const positive = z.number().int().min(1);

/** Every key the config file may hold; unknown keys are an error (a typo must not be silently ignored). */
export const ConfigFile = z.strictObject({
  url: z.string().optional(),
  apiKey: z.string().min(1).optional(),
  db: z.string().min(1).optional(),
  port: port.optional(),
  host: z.string().min(1).optional(),
  workers: z.number().int().min(0).optional(),
  concurrency: positive.optional(),
  leaseMs: positive.optional(),
  pollMs: positive.optional(),
  synchronous: z.enum(['full', 'normal']).optional(),
  apiKeys: z.array(z.string().min(1)).optional(),
  jwksUrl: z.string().optional(),
});
export type ConfigFile = z.infer<typeof ConfigFile>;

export interface LoadedConfig {
  /** Absolute path of the file read, or null when there is none. */
  path: string | null;
  values: ConfigFile;
}

/** Reads the config file named by `--config`, `BELAY_CONFIG` or the default location. */
export function loadConfigFile(flag: string | undefined, env: NodeJS.ProcessEnv, cwd = process.cwd()): LoadedConfig {
  const named = flag ?? (env.BELAY_CONFIG || undefined);
  const path = resolve(cwd, named ?? DEFAULT_CONFIG_FILE);
  if (!existsSync(path)) {
    if (named !== undefined) throw new UsageError(`config file ${named} does not exist (from ${flag !== undefined ? '--config' : 'BELAY_CONFIG'})`);
    return { path: null, values: {} };
  }
  let raw: unknown;
  try {
    raw = JSON.parse(readFileSync(path, 'utf8'));
  } catch (e) {
    throw new UsageError(`config file ${path} is not valid JSON: ${(e as Error).message}`);
  }
  const parsed = ConfigFile.safeParse(raw);
  if (!parsed.success) {
    const problems = parsed.error.issues.map((i) => {
      if (i.code === 'unrecognized_keys') return `unknown key${i.keys.length > 1 ? 's' : ''} ${i.keys.map((k) => `"${k}"`).join(', ')} (allowed: ${Object.keys(ConfigFile.shape).join(', ')})`;
      const at = i.path.length ? `"${i.path.map(String).join('.')}"` : 'the file';
      return `${at}: ${i.message}`;
    });
    throw new UsageError(`config file ${path}: ${problems.join('; ')}`);
  }
  return { path, values: parsed.data };
}

/** Where a resolved setting came from (doctor prints it). */
export type Source = 'flag' | 'env' | 'config' | 'default' | 'key-file';

export interface Setting<T> {
  value: T;
  source: Source;
  /** e.g. `--url`, `BELAY_URL`, `.belay/config.json "url"`. */
  from: string;
}

/** Picks the first defined of flag, environment, config file and default, remembering which one it was. */
export function pick<T>(
  options: { flag?: [string, T | undefined]; env?: [string, T | undefined]; config?: [LoadedConfig, keyof ConfigFile, T | undefined] },
  fallback: T,
): Setting<T> {
  if (options.flag && options.flag[1] !== undefined) return { value: options.flag[1], source: 'flag', from: options.flag[0] };
  if (options.env && options.env[1] !== undefined) return { value: options.env[1], source: 'env', from: options.env[0] };
  if (options.config && options.config[2] !== undefined) return { value: options.config[2], source: 'config', from: `${options.config[0].path} "${String(options.config[1])}"` };
  return { value: fallback, source: 'default', from: 'default' };
}

/** A server base URL: http(s), no query or fragment; the trailing slash is dropped. */
export function parseServerUrl(raw: string, from: string): string {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new UsageError(`${from} must be an http:// or https:// URL, got "${raw}"`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new UsageError(`${from} must be an http:// or https:// URL, got "${raw}"`);
  if (url.search || url.hash) throw new UsageError(`${from} must not have a query or fragment, got "${raw}"`);
  return url.toString().replace(/\/+$/, '');
}

export function parseIntSetting(raw: string | number, from: string, min: number, max = Number.MAX_SAFE_INTEGER): number {
  const n = typeof raw === 'number' ? raw : raw.trim() === '' ? Number.NaN : Number(raw);
  if (!Number.isInteger(n) || n < min || n > max) {
    const range = max === Number.MAX_SAFE_INTEGER ? (min === 0 ? 'a non-negative integer' : `an integer ≥ ${min}`) : `an integer from ${min} to ${max}`;
    throw new UsageError(`${from} must be ${range}, got "${raw}"`);
  }
  return n;
}

/** The settings every client command (tasks, doctor) needs: server URL, API key, and the store for doctor. */
export interface ClientSettings {
  config: LoadedConfig;
  url: Setting<string>;
  apiKey: Setting<string> | null;
  db: Setting<string>;
}

export function resolveClientSettings(flags: { url?: string; 'api-key'?: string; db?: string; config?: string }, env: NodeJS.ProcessEnv, cwd = process.cwd()): ClientSettings {
  const config = loadConfigFile(flags.config, env, cwd);
  const urlSetting = pick({ flag: ['--url', flags.url], env: ['BELAY_URL', env.BELAY_URL || undefined], config: [config, 'url', config.values.url] }, DEFAULT_URL);
  const url = { ...urlSetting, value: parseServerUrl(urlSetting.value, urlSetting.from) };
  const db = pick({ flag: ['--db', flags.db], env: ['BELAY_DB', env.BELAY_DB || undefined], config: [config, 'db', config.values.db] }, DEFAULT_DB);
  let apiKey: Setting<string> | null = null;
  const picked = pick<string | undefined>({ flag: ['--api-key', flags['api-key']], env: ['BELAY_API_KEY', env.BELAY_API_KEY || undefined], config: [config, 'apiKey', config.values.apiKey] }, undefined);
  if (picked.value !== undefined) {
    if (picked.value.trim() === '' || /\s/.test(picked.value.trim())) throw new UsageError(`${picked.from} must be a non-empty key without spaces`);
    apiKey = { ...picked, value: picked.value.trim() };
  } else {
    // `belay serve` keeps its development key next to a SQLite database: a local CLI finds it there.
    const keyFile = resolve(cwd, /^postgres(ql)?:\/\//.test(db.value) ? '.belay' : dirname(db.value), 'api-key');
    if (existsSync(keyFile)) {
      const key = readFileSync(keyFile, 'utf8').trim();
      if (key) apiKey = { value: key, source: 'key-file', from: keyFile };
    }
  }
  return { config, url, apiKey, db };
}

export type ParsedFlags<O extends NonNullable<ParseArgsConfig['options']>> = ReturnType<typeof parseArgs<{ args: string[]; options: O; allowPositionals: true; strict: true }>>;

/** `parseArgs` with its errors turned into a UsageError carrying the command's usage text. */
export function parseFlags<O extends NonNullable<ParseArgsConfig['options']>>(argv: string[], options: O, usage: string): ParsedFlags<O> {
  try {
    return parseArgs({ args: argv, options, allowPositionals: true, strict: true });
  } catch (e) {
    throw new UsageError((e as Error).message.replace(/\. To specify a positional argument.*$/s, ''), usage);
  }
}

/** For tests and doctor output: the config file's path relative to the working directory, when there is one. */
export function configFileLabel(config: LoadedConfig, cwd = process.cwd()): string | null {
  if (!config.path) return null;
  return config.path.startsWith(cwd + '/') ? config.path.slice(cwd.length + 1) : config.path;
}

export const CONFIG_HELP = `Configuration (first found wins): flag, environment variable, config file, default.
  Config file: --config <path>, else BELAY_CONFIG, else ${DEFAULT_CONFIG_FILE} if present. JSON with the keys
  ${Object.keys(ConfigFile.shape).join(', ')}.
  API key for client commands: --api-key, BELAY_API_KEY, "apiKey", else the development key that \`belay serve\`
  wrote next to the SQLite database (${join('.belay', 'api-key')}).`;

/** Settings of the commands that open the store themselves (serve, worker, migrate, demo). */
export interface StoreSettings {
  config: LoadedConfig;
  db: string;
  synchronous: 'full' | 'normal' | undefined;
}

export function resolveStoreSettings(flags: { db?: string; synchronous?: string; config?: string }, env: NodeJS.ProcessEnv, cwd = process.cwd()): StoreSettings {
  const config = loadConfigFile(flags.config, env, cwd);
  const db = pick({ flag: ['--db', flags.db], env: ['BELAY_DB', env.BELAY_DB || undefined], config: [config, 'db', config.values.db] }, DEFAULT_DB).value;
  const sync = pick<string | undefined>({ flag: ['--synchronous', flags.synchronous], config: [config, 'synchronous', config.values.synchronous] }, undefined);
  if (sync.value !== undefined && sync.value !== 'full' && sync.value !== 'normal') throw new UsageError(`${sync.from} must be "full" or "normal", got "${sync.value}"`);
  return { config, db, synchronous: sync.value };
}

/** An integer setting from flag, config file or default (with the range in the error). */
export function intSetting(flag: [string, string | undefined], config: LoadedConfig, key: keyof ConfigFile, fallback: number, min: number, max?: number): number {
  const s = pick<string | number>({ flag, config: [config, key, config.values[key] as number | undefined] }, fallback);
  return parseIntSetting(s.value, s.from, min, max);
}
