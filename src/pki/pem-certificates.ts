/**
 * Reading PEM certificates and keys without I/O and without @peculiar/x509: Node's own
 * `X509Certificate` parses, verifies signatures and matches names synchronously, which is what a
 * pure decision over a Secret's content needs. Garbage never throws here; it reads as absent.
 */
import { createPrivateKey, X509Certificate, type KeyObject } from 'node:crypto';
import { findPemBlocks, PEM_FIELD_MAX_BLOCKS, PEM_FIELD_MAX_BYTES } from './pem-scan.js';

/** A parsed certificate with the facts the serving-certificate protocol reads. */
export interface ParsedCertificate {
  readonly pem: string;
  /** SHA-256 of the DER, lower-case hex without separators. */
  readonly fingerprint: string;
  readonly notBefore: number;
  readonly notAfter: number;
  readonly isCa: boolean;
  readonly x509: X509Certificate;
}

// Parsing is pure, so results are memoised by their text: the keeper re-reads the same PEMs on
// every watch event and every timer.
const cache = new Map<string, ParsedCertificate | null>();
const CACHE_LIMIT = 256;

/** One certificate from one PEM block; undefined for anything unparseable or over the field limit. */
export function parseCertificate(pemBlock: string): ParsedCertificate | undefined {
  if (pemBlock.length > PEM_FIELD_MAX_BYTES) return undefined;
  const hit = cache.get(pemBlock);
  if (hit !== undefined) return hit ?? undefined;
  let parsed: ParsedCertificate | null = null;
  try {
    const x509 = new X509Certificate(pemBlock);
    const notBefore = Date.parse(x509.validFrom);
    const notAfter = Date.parse(x509.validTo);
    if (Number.isFinite(notBefore) && Number.isFinite(notAfter))
      parsed = {
        pem: `${pemBlock.trim()}\n`,
        fingerprint: x509.fingerprint256.replaceAll(':', '').toLowerCase(),
        notBefore,
        notAfter,
        isCa: x509.ca,
        x509,
      };
  } catch {
    parsed = null;
  }
  if (cache.size >= CACHE_LIMIT) cache.clear();
  cache.set(pemBlock, parsed);
  return parsed ?? undefined;
}

/**
 * Every certificate in a PEM bundle, in order, and whether anything else was in it. Text over
 * {@link PEM_FIELD_MAX_BYTES} is not read (no certificates, garbage), and at most
 * {@link PEM_FIELD_MAX_BLOCKS} blocks are parsed (more is garbage too).
 */
export function parseCertificates(text: string | undefined): {
  readonly certificates: ParsedCertificate[];
  readonly garbage: boolean;
} {
  if (text === undefined) return { certificates: [], garbage: false };
  if (text.length > PEM_FIELD_MAX_BYTES) return { certificates: [], garbage: true };
  if (text.trim() === '') return { certificates: [], garbage: false };
  const found = findPemBlocks(text, 'CERTIFICATE', PEM_FIELD_MAX_BLOCKS);
  const certificates: ParsedCertificate[] = [];
  let garbage = found.blocks.length === 0 || found.outside || found.truncated;
  for (const block of found.blocks) {
    const c = parseCertificate(block.text);
    if (c) certificates.push(c);
    else garbage = true;
  }
  return { certificates, garbage };
}

// Reading a key costs OpenSSL about a millisecond; the same few keys are read again and again.
const keys = new Map<string, KeyObject | null>();

/** A private key from PEM; undefined when unparseable or over the field limit. */
export function parsePrivateKey(pem: string | undefined): KeyObject | undefined {
  if (pem === undefined || pem.length > PEM_FIELD_MAX_BYTES || pem.trim() === '') return undefined;
  const hit = keys.get(pem);
  if (hit !== undefined) return hit ?? undefined;
  let key: KeyObject | null;
  try {
    key = createPrivateKey(pem);
  } catch {
    key = null;
  }
  if (keys.size >= 16) keys.clear();
  keys.set(pem, key);
  return key ?? undefined;
}

/** Whether `key` is the private key of `cert`. */
export function keyMatches(cert: ParsedCertificate, key: KeyObject | undefined): boolean {
  if (!key) return false;
  try {
    return cert.x509.checkPrivateKey(key);
  } catch {
    return false;
  }
}

const issued = new Map<string, boolean>();

/** Whether `ca` signed `leaf` (names chain and the signature verifies). */
export function issuedBy(leaf: ParsedCertificate, ca: ParsedCertificate): boolean {
  const pair = `${leaf.fingerprint}/${ca.fingerprint}`;
  let result = issued.get(pair);
  if (result === undefined) {
    try {
      result = leaf.x509.checkIssued(ca.x509) && leaf.x509.verify(ca.x509.publicKey);
    } catch {
      result = false;
    }
    if (issued.size >= CACHE_LIMIT) issued.clear();
    issued.set(pair, result);
  }
  return result;
}

/** Whether the certificate's names cover every DNS name and IP address given. */
export function coversNames(
  cert: ParsedCertificate,
  dnsNames: readonly string[],
  ipAddresses: readonly string[],
): boolean {
  try {
    return (
      dnsNames.every((n) => cert.x509.checkHost(n, { subject: 'never', wildcards: false }) !== undefined) &&
      ipAddresses.every((ip) => cert.x509.checkIP(ip) !== undefined)
    );
  } catch {
    return false;
  }
}
