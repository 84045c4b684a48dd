/**
 * @module protocols/http/auth
 * Every route is authenticated. Bearer API keys map to a tenant and a principal; JWTs verified against a JWKS are
 * an option. A task belongs to its tenant; inside the tenant a `member` sees the tasks it created and an `admin`
 * sees them all. Only the explicit development flag allows anonymous access.
 */
import { createRemoteJWKSet, jwtVerify, type JWTVerifyGetKey } from 'jose';
import { timingSafeEqual, createHash } from 'node:crypto';
import { BelayError } from '../../core/errors.js';
import type { Principal } from '../../service/task-service.js';

export interface ApiKeyEntry {
  key: string;
  tenant: string;
  principal: string;
  role: 'member' | 'admin';
}

export interface JwtAuthOptions {
  jwksUrl: string;
  issuer?: string;
  audience?: string;
  /** Claim naming the tenant (default `tenant`). */
  tenantClaim?: string;
  /** Claim naming the role (`admin` or anything else for member; default `role`). */
  roleClaim?: string;
}

export interface AuthOptions {
  apiKeys?: ApiKeyEntry[];
  jwt?: JwtAuthOptions;
  /** Development only: every request runs as `default`/`dev` admin. */
  insecureNoAuth?: boolean;
  /** Principals refused even with a valid credential (disabled users). */
  isDisabled?: (who: Principal) => boolean | Promise<boolean>;
}

/**
 * Parses `KEY=TENANT[:PRINCIPAL[:ROLE]]`. A key with only a tenant is a tenant-wide admin key named after the
 * tenant; a key with a principal is a member unless its role says `admin`.
 */
export function parseApiKeySpec(spec: string): ApiKeyEntry {
  const eq = spec.indexOf('=');
  const key = eq > 0 ? spec.slice(0, eq) : '';
  const [tenant, principal, role] = (eq > 0 ? spec.slice(eq + 1) : '').split(':');
  if (!key || key.length < 16) throw new Error(`API key spec "${spec.slice(0, 8)}…" needs KEY=TENANT[:PRINCIPAL[:ROLE]] with a key of at least 16 characters`);
  if (!tenant || !/^[A-Za-z0-9_.-]{1,64}$/.test(tenant)) throw new Error('An API key needs a tenant of [A-Za-z0-9_.-]');
  if (principal !== undefined && !/^[A-Za-z0-9_.@-]{1,128}$/.test(principal)) throw new Error('A principal is [A-Za-z0-9_.@-]');
  if (role !== undefined && role !== 'admin' && role !== 'member') throw new Error(`Unknown role "${role}" (admin or member)`);
  return { key, tenant, principal: principal ?? tenant, role: role ?? (principal === undefined ? 'admin' : 'member') };
}

function digest(s: string): Buffer {
  return createHash('sha256').update(s).digest();
}

export class Authenticator {
  private readonly keys: Array<{ digest: Buffer; entry: ApiKeyEntry }>;
  private readonly jwks: JWTVerifyGetKey | null;

  private readonly options: AuthOptions;

  constructor(options: AuthOptions) {
    this.options = { ...options };
    this.keys = (options.apiKeys ?? []).map((entry) => ({ digest: digest(entry.key), entry }));
    this.jwks = options.jwt ? createRemoteJWKSet(new URL(options.jwt.jwksUrl)) : null;
    if (!options.insecureNoAuth && this.keys.length === 0 && !this.jwks) throw new Error('No API keys and no JWKS configured: every route would refuse');
  }

  /**
   * Installs the check for disabled principals unless one was configured. The app calls this with the store-backed
   * check, so every front (REST, A2A, MCP) refuses a disabled principal.
   */
  useDisabledCheck(isDisabled: (who: Principal) => boolean | Promise<boolean>): void {
    this.options.isDisabled ??= isDisabled;
  }

  get insecure(): boolean {
    return this.options.insecureNoAuth === true;
  }

  /** What credentials this gateway accepts (the A2A agent card declares matching security schemes). */
  get accepts(): { apiKeys: boolean; jwt: boolean } {
    return { apiKeys: this.keys.length > 0, jwt: this.jwks !== null };
  }

  /** @throws BelayError UNAUTHORIZED */
  async authenticate(authorization: string | null | undefined): Promise<Principal> {
    let who: Principal | null = null;
    if (this.options.insecureNoAuth) who = { tenant: 'default', principal: 'dev', role: 'admin' };
    else {
      const m = /^Bearer\s+(\S+)$/i.exec(authorization ?? '');
      if (!m) throw new BelayError('UNAUTHORIZED', 'Send Authorization: Bearer <API key or JWT>');
      who = this.fromApiKey(m[1]!) ?? (await this.fromJwt(m[1]!));
      if (!who) throw new BelayError('UNAUTHORIZED', 'Unknown or invalid credential');
    }
    if (!this.options.insecureNoAuth && this.options.isDisabled && (await this.options.isDisabled(who))) throw new BelayError('UNAUTHORIZED', 'This principal is disabled');
    return who;
  }

  private fromApiKey(token: string): Principal | null {
    const d = digest(token);
    // Compare digests in constant time, and all of them, so timing says nothing about which key nearly matched.
    let found: ApiKeyEntry | null = null;
    for (const k of this.keys) if (timingSafeEqual(k.digest, d)) found = k.entry;
    return found ? { tenant: found.tenant, principal: found.principal, role: found.role } : null;
  }

  private async fromJwt(token: string): Promise<Principal | null> {
    const jwt = this.options.jwt;
    if (!this.jwks || !jwt || token.split('.').length !== 3) return null;
    try {
      const { payload } = await jwtVerify(token, this.jwks, {
        ...(jwt.issuer ? { issuer: jwt.issuer } : {}),
        ...(jwt.audience ? { audience: jwt.audience } : {}),
      });
      const tenant = payload[jwt.tenantClaim ?? 'tenant'];
      if (typeof tenant !== 'string' || typeof payload.sub !== 'string') return null;
      return { tenant, principal: payload.sub, role: payload[jwt.roleClaim ?? 'role'] === 'admin' ? 'admin' : 'member' };
    } catch {
      return null;
    }
  }
}
