import type { X509Certificate } from 'node:crypto';
import type { PeerCertificate } from 'node:tls';

/** Who a client certificate names: the runtime ID (CN) and its DNS SANs. */
export interface PeerIdentity {
  /** Undefined when absent or when the subject holds several CNs (no single identity). */
  readonly commonName: string | undefined;
  readonly dnsNames: readonly string[];
}

/** Why an authenticated client was refused, the `reason` label (a closed set). */
export type VerificationFailure = 'unknown_runtime' | 'san_mismatch' | 'untrusted_ca';

/** The outcome of {@link verifyPeer}. */
export type PeerVerdict =
  | { readonly ok: true; readonly runtimeId: string }
  | { readonly ok: false; readonly reason: VerificationFailure };

/** Reads the CN and the DNS SANs of a peer certificate as Node's TLS layer reports them. */
export function peerIdentityOf(cert: PeerCertificate): PeerIdentity {
  // Node reports a repeated attribute as an array, whatever its typings say.
  const cn: unknown = (cert.subject as Partial<Record<string, unknown>> | undefined)?.CN;
  return {
    commonName: typeof cn === 'string' && cn !== '' ? cn : undefined,
    dnsNames: parseDnsNames(cert.subjectaltname),
  };
}

/**
 * The DNS names of Node's `subjectaltname` string: `DNS:a, DNS:b, IP Address:1.2.3.4`, where a
 * value holding a comma, quote or other special character is a JSON-quoted string (Node's fix
 * for CVE-2021-44532), so a crafted SAN cannot smuggle a second entry in.
 */
export function parseDnsNames(subjectAltName: string | undefined): string[] {
  const names: string[] = [];
  if (subjectAltName === undefined) return names;
  let i = 0;
  while (i < subjectAltName.length) {
    const colon = subjectAltName.indexOf(':', i);
    if (colon < 0) break;
    const type = subjectAltName.slice(i, colon);
    let value: string;
    let end: number;
    if (subjectAltName[colon + 1] === '"') {
      end = closingQuote(subjectAltName, colon + 2);
      if (end < 0) break;
      try {
        value = JSON.parse(subjectAltName.slice(colon + 1, end + 1)) as string;
      } catch {
        break;
      }
      end++;
    } else {
      end = subjectAltName.indexOf(', ', colon + 1);
      if (end < 0) end = subjectAltName.length;
      value = subjectAltName.slice(colon + 1, end);
    }
    if (type === 'DNS') names.push(value);
    i = end + 2; // past ", "
  }
  return names;
}

function closingQuote(s: string, from: number): number {
  for (let i = from; i < s.length; i++) {
    if (s[i] === '\\') i++;
    else if (s[i] === '"') return i;
  }
  return -1;
}

/**
 * SAN pinning, as the Runtime Watcher's listener does it in the lifecycle-manager: the CN must
 * be a runtime we know and one DNS SAN must equal that runtime's domain. The comparison is exact
 * (DNS is case-insensitive, so case is ignored; no wildcard matching: a runtime's certificate
 * names its own domain).
 */
export function verifyPeer(
  identity: PeerIdentity,
  lookupRuntime: (runtimeId: string) => { domain: string } | undefined,
): PeerVerdict {
  const runtimeId = identity.commonName;
  if (runtimeId === undefined) return { ok: false, reason: 'unknown_runtime' };
  const runtime = lookupRuntime(runtimeId);
  if (runtime === undefined) return { ok: false, reason: 'unknown_runtime' };
  const domain = normaliseDns(runtime.domain);
  if (domain === '' || !identity.dnsNames.some((n) => normaliseDns(n) === domain)) {
    return { ok: false, reason: 'san_mismatch' };
  }
  return { ok: true, runtimeId };
}

/**
 * Whether one of `cas` issued and signed `cert`. The TLS layer checks this at the handshake; this
 * repeats it for connections (and resumed sessions) that predate a change of the trusted CAs.
 */
export function issuedByOneOf(cert: X509Certificate, cas: readonly X509Certificate[]): boolean {
  return cas.some((ca) => cert.checkIssued(ca) && cert.verify(ca.publicKey));
}

function normaliseDns(name: string): string {
  return name.trim().toLowerCase().replace(/\.$/, '');
}
