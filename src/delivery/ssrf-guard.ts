/**
 * @module delivery/ssrf-guard
 * Outbound URL policy for webhooks and push notifications (reference §2, OWASP SSRF "case 2"): any public address,
 * nothing else. Checked at registration (a clear 422 early) AND on every connect (DNS can change in between: the
 * address the socket connects to is the one checked, so a rebinding name cannot slip through).
 *
 * Refused: every address ipaddr.js does not class as plain `unicast` — loopback, private (RFC 1918), link-local
 * (with the 169.254.169.254 metadata service), CGNAT 100.64/10, unique-local fc00::/7, unspecified (0.0.0.0, ::),
 * multicast, broadcast, reserved and documentation ranges, NAT64 64:ff9b::/96, 6to4 2002::/16, Teredo — plus any
 * IPv4-mapped IPv6 address (::ffff:a.b.c.d), public or not, and cloud metadata addresses that look public
 * (168.63.129.16). Names: `localhost` and `*.localhost` are refused without asking DNS; every other name is resolved
 * and refused when ANY of its addresses is refused.
 *
 * Integer, octal and hex IPv4 forms (`2130706433`, `0177.0.0.1`, `0x7f.1`, `0`) need no special case: the WHATWG
 * URL parser turns them into dotted quads before this module sees them.
 *
 * The allowlist (tests, the A2A TCK, an internal receiver you trust) names hosts exactly, IP addresses, or CIDR
 * ranges; it is the only way past the policy.
 */
import { lookup as dnsLookup } from 'node:dns';
import type { LookupAddress, LookupAllOptions, LookupOneOptions } from 'node:dns';
import ipaddr from 'ipaddr.js';
import { BelayError } from '../core/errors.js';

/** Resolves a host name to all its addresses (injectable so tests can play a rebinding DNS server). */
export type Resolver = (hostname: string) => Promise<LookupAddress[]>;

export const systemResolver: Resolver = (hostname) =>
  new Promise((resolve, reject) => {
    dnsLookup(hostname, { all: true, verbatim: true }, (err, addresses) => (err ? reject(err) : resolve(addresses)));
  });

/** Addresses that are metadata services although ipaddr.js classes them as public unicast. */
const METADATA_ADDRESSES = new Set(['168.63.129.16']);

export interface UrlGuardOptions {
  /** Hosts (exact, case-insensitive), IP addresses, or CIDR ranges allowed despite the policy. */
  allow?: readonly string[];
  resolver?: Resolver;
}

/** Why a URL or address was refused: scheme, credentials, invalid_url, localhost, unresolvable, or an ipaddr.js range name. */
export type RefusalReason = string;

/** Thrown (as a BelayError VALIDATION with these details) when a URL or address is refused. */
export function ssrfRefusal(message: string, reason: RefusalReason, address?: string): BelayError {
  return new BelayError('VALIDATION', message, { details: { reason: 'ssrf_refused', refused: reason, ...(address ? { address } : {}) } });
}

export function isSsrfRefusal(e: unknown): e is BelayError {
  return e instanceof BelayError && e.details?.reason === 'ssrf_refused';
}

export class UrlGuard {
  private readonly hosts = new Set<string>();
  private readonly ranges: Array<[ipaddr.IPv4 | ipaddr.IPv6, number]> = [];
  readonly resolver: Resolver;

  constructor(options: UrlGuardOptions = {}) {
    this.resolver = options.resolver ?? systemResolver;
    for (const raw of options.allow ?? []) {
      const entry = raw.trim().toLowerCase().replace(/^\[(.*)\]$/, '$1');
      if (!entry) continue;
      if (entry.includes('/')) this.ranges.push(ipaddr.parseCIDR(entry));
      else if (ipaddr.isValid(entry)) this.ranges.push([ipaddr.parse(entry), ipaddr.parse(entry).kind() === 'ipv4' ? 32 : 128]);
      else this.hosts.add(entry.replace(/\.$/, ''));
    }
  }

  /** Parses an allowlist setting: comma or space separated entries. */
  static parseAllowlist(value: string | undefined): string[] {
    return (value ?? '').split(/[,\s]+/).map((s) => s.trim()).filter(Boolean);
  }

  private hostAllowed(hostname: string): boolean {
    return this.hosts.has(hostname.toLowerCase().replace(/\.$/, ''));
  }

  private addressAllowed(addr: ipaddr.IPv4 | ipaddr.IPv6): boolean {
    for (const [range, bits] of this.ranges) {
      if (range.kind() === addr.kind() && addr.match(range, bits)) return true;
    }
    return false;
  }

  /**
   * Why this address may not be contacted, or null when it may.
   * Allowlisted addresses pass; otherwise only plain public unicast passes (IPv4-mapped IPv6 never does).
   */
  refusal(address: string): string | null {
    const text = address.replace(/^\[(.*)\]$/, '$1').replace(/%.*$/, '');
    if (!ipaddr.isValid(text)) return 'invalid_address';
    const parsed = ipaddr.parse(text);
    if (this.addressAllowed(parsed)) return null;
    if (parsed.kind() === 'ipv6') {
      const v6 = parsed as ipaddr.IPv6;
      if (v6.isIPv4MappedAddress()) {
        const v4 = v6.toIPv4Address();
        return this.addressAllowed(v4) ? null : 'ipv4Mapped';
      }
    }
    const range = parsed.range();
    if (range !== 'unicast') return range;
    if (METADATA_ADDRESSES.has(parsed.toString())) return 'metadata';
    return null;
  }

  /**
   * Registration check: shape (http/https, no userinfo) and every resolved address.
   * @throws BelayError VALIDATION with `details.reason = 'ssrf_refused'`
   */
  async checkUrl(raw: string): Promise<URL> {
    let url: URL;
    try {
      url = new URL(raw);
    } catch {
      throw ssrfRefusal('The URL is not an absolute URL', 'invalid_url');
    }
    if (url.protocol !== 'http:' && url.protocol !== 'https:') throw ssrfRefusal('The URL must be http or https', 'scheme');
    if (url.username !== '' || url.password !== '') throw ssrfRefusal('The URL must not carry credentials', 'credentials');
    await this.resolveChecked(url.hostname);
    return url;
  }

  /**
   * Resolves a URL hostname (IP literals as they are) and checks every address.
   * @throws BelayError VALIDATION (ssrf_refused)
   */
  async resolveChecked(hostname: string): Promise<LookupAddress[]> {
    const host = hostname.replace(/^\[(.*)\]$/, '$1');
    if (ipaddr.isValid(host)) {
      const why = this.refusal(host);
      if (why) throw ssrfRefusal(`The address ${host} is not allowed (${why})`, why, host);
      return [{ address: host, family: ipaddr.parse(host).kind() === 'ipv4' ? 4 : 6 }];
    }
    if (this.hostAllowed(host)) return this.resolver(host);
    const bare = host.toLowerCase().replace(/\.$/, '');
    if (bare === 'localhost' || bare.endsWith('.localhost')) throw ssrfRefusal(`The host ${host} is not allowed (localhost)`, 'localhost');
    let addresses: LookupAddress[];
    try {
      addresses = await this.resolver(host);
    } catch (e) {
      throw ssrfRefusal(`The host ${host} does not resolve (${(e as Error).message})`, 'unresolvable');
    }
    if (addresses.length === 0) throw ssrfRefusal(`The host ${host} does not resolve`, 'unresolvable');
    for (const a of addresses) {
      const why = this.refusal(a.address);
      if (why) throw ssrfRefusal(`The host ${host} resolves to ${a.address}, which is not allowed (${why})`, why, a.address);
    }
    return addresses;
  }

  /**
   * A `lookup` for `http.request` / `net.connect`: resolves through the guard, so the address the socket connects
   * to is the address that was checked (no time-of-check/time-of-use gap for DNS rebinding).
   */
  lookup(): (hostname: string, options: LookupOneOptions | LookupAllOptions | number, callback: (...args: any[]) => void) => void {
    return (hostname, options, callback) => {
      const all = typeof options === 'object' && options !== null && (options as LookupAllOptions).all === true;
      const family = typeof options === 'number' ? options : typeof options === 'object' && options !== null ? Number((options as LookupOneOptions).family ?? 0) : 0;
      this.resolveChecked(hostname).then(
        (addresses) => {
          const usable = family === 4 || family === 6 ? addresses.filter((a) => a.family === family) : addresses;
          if (usable.length === 0) {
            callback(Object.assign(new Error(`No IPv${family} address for ${hostname}`), { code: 'ENOTFOUND' }));
            return;
          }
          if (all) callback(null, usable);
          else callback(null, usable[0]!.address, usable[0]!.family);
        },
        (e: unknown) => callback(e),
      );
    };
  }
}
