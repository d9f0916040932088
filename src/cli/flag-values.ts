/** Parsing of flag values shared by the commands; a malformed value is a {@link FlagError}. */
import { HOST_IP_REFERENCE } from '../render/webhook-options.js';
import type { TlsMinVersion } from '../api/tls-min-version.js';

/** A flag value is malformed. */
export class FlagError extends Error {
  override readonly name = 'FlagError';
}

const UNITS: Readonly<Record<string, number>> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 };

/** Parses a Go-style duration (`500ms`, `2s`, `1m30s`, `1h`) into milliseconds. */
export function parseDuration(text: string): number {
  const re = /(\d+(?:\.\d+)?)(ms|s|m|h)/gy;
  let total = 0;
  let matched = 0;
  for (let m = re.exec(text); m !== null; m = re.exec(text)) {
    total += Number(m[1]) * (UNITS[m[2] ?? ''] ?? NaN);
    matched = re.lastIndex;
  }
  if (text === '' || matched !== text.length || !Number.isFinite(total)) {
    throw new FlagError(`invalid duration "${text}" (examples: 500ms, 2s, 1m30s)`);
  }
  return total;
}

/** A non-negative integer flag value. */
export function positiveInt(name: string, text: string): number {
  const n = Number(text);
  if (!Number.isInteger(n) || n < 0)
    throw new FlagError(`--${name} must be a non-negative integer, got "${text}"`);
  return n;
}

/**
 * `registry=url` values of a repeatable flag as a map (where registries are served); a URL may name
 * the node's IP as `$(HOST_IP)` (../render/webhook-options.ts).
 */
export function registryServersOf(values: readonly string[], flag: string): Record<string, string> {
  const servers: Record<string, string> = {};
  for (const value of values) {
    const at = value.indexOf('=');
    let url: URL | undefined;
    try {
      // The node's IP, as Kubernetes expands it in the webhook Pod's args, stands for an address.
      url = new URL(value.slice(at + 1).replaceAll(HOST_IP_REFERENCE, '192.0.2.1'));
    } catch {
      url = undefined;
    }
    if (at <= 0 || url === undefined || (url.protocol !== 'http:' && url.protocol !== 'https:'))
      throw new FlagError(`${flag} must be registry=http(s)://host[:port], got ${value}`);
    servers[value.slice(0, at)] = value.slice(at + 1);
  }
  return servers;
}

/** `--tls-min-version`: `1.3` (the default) or `1.2`; anything older is never accepted. */
export function tlsMinVersionOf(text: string): TlsMinVersion {
  if (text === '1.3') return 'TLSv1.3';
  if (text === '1.2') return 'TLSv1.2';
  throw new FlagError(`--tls-min-version must be 1.3 or 1.2, got "${text}"`);
}
