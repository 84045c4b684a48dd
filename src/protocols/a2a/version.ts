/**
 * @module protocols/a2a/version
 * `A2A-Version` handling (spec §3.6). Belay speaks A2A 1.0 only. The version comes from the `A2A-Version` header or
 * the `A2A-Version` query parameter; versions are Major.Minor (a patch number, if sent, is ignored).
 *
 * A request without a version is, by §3.6.2, an A2A 0.3 request; Belay does not serve 0.3, so it gets
 * VersionNotSupportedError (-32009 / HTTP 400), exactly like a request naming any other version. The agent card
 * at /.well-known/agent-card.json is version-independent and needs no header.
 */
import { A2aError } from './a2a-error.js';
import { A2A_PROTOCOL_VERSION } from './wire-types.js';

export function checkA2aVersion(header: string | undefined, query: string | undefined): void {
  const raw = (header ?? query ?? '').trim();
  const m = /^(\d+)\.(\d+)(?:\.\d+)?$/.exec(raw);
  if (m && Number(m[1]) === 1 && Number(m[2]) === 0) return;
  const asked = raw === '' ? '0.3 (no A2A-Version header)' : raw;
  throw new A2aError('VERSION_NOT_SUPPORTED', `A2A version ${asked} is not supported; send A2A-Version: ${A2A_PROTOCOL_VERSION}`, {
    metadata: { requestedVersion: raw === '' ? '0.3' : raw, supportedVersions: A2A_PROTOCOL_VERSION },
  });
}
