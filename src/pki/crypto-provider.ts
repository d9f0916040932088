// @peculiar/x509 resolves its ASN.1 codecs through tsyringe, which needs the Reflect
// metadata polyfill loaded before the library itself.
import 'reflect-metadata';
import * as x509 from '@peculiar/x509';
import { webcrypto } from 'node:crypto';
import { firstPemDer } from './pem-scan.js';

/** Node's WebCrypto key type (the DOM lib is not loaded in this project). */
export type CryptoKey = webcrypto.CryptoKey;
/** Node's WebCrypto key pair type. */
export type CryptoKeyPair = webcrypto.CryptoKeyPair;

// The one-argument overload is typed with the DOM Crypto type, which this Node-only project does not load.
(x509.cryptoProvider as unknown as { set(provider: unknown): void }).set(webcrypto);

/** ECDSA P-256 with SHA-256: small keys, fast signatures, accepted by Go's TLS stack and kube-apiserver. */
export const ecdsaP256 = { name: 'ECDSA', namedCurve: 'P-256', hash: 'SHA-256' } as const;

export { x509, webcrypto };

/** Generates an extractable ECDSA P-256 key pair. */
export async function generateKeyPair(): Promise<CryptoKeyPair> {
  return await webcrypto.subtle.generateKey(ecdsaP256, true, ['sign', 'verify']);
}

/** Encodes DER bytes as PEM with the given label. */
export function toPem(der: ArrayBuffer, label: string): string {
  const b64 = Buffer.from(der).toString('base64');
  const lines = b64.match(/.{1,64}/g) ?? [];
  return `-----BEGIN ${label}-----\n${lines.join('\n')}\n-----END ${label}-----\n`;
}

/** Decodes the first PEM block with the given label into DER bytes (linear; see ./pem-scan.ts). */
export function fromPem(pem: string, label: string): ArrayBuffer {
  const buf = firstPemDer(pem, label);
  if (buf === undefined || buf.length === 0) throw new PkiError(`no PEM block labelled ${label}`);
  // A copy: the Buffer may be a view of Node's shared pool.
  const der = new ArrayBuffer(buf.byteLength);
  new Uint8Array(der).set(buf);
  return der;
}

/** Exports a private key as PKCS#8 PEM (`PRIVATE KEY`), the form Node's TLS and Go both read. */
export async function exportPrivateKeyPem(key: CryptoKey): Promise<string> {
  return toPem(await webcrypto.subtle.exportKey('pkcs8', key), 'PRIVATE KEY');
}

/** Exports a public key as SPKI PEM (`PUBLIC KEY`). */
export async function exportPublicKeyPem(key: CryptoKey): Promise<string> {
  return toPem(await webcrypto.subtle.exportKey('spki', key), 'PUBLIC KEY');
}

/** Imports a PKCS#8 ECDSA P-256 private key. */
export async function importPrivateKeyPem(pem: string): Promise<CryptoKey> {
  try {
    return await webcrypto.subtle.importKey('pkcs8', fromPem(pem, 'PRIVATE KEY'), ecdsaP256, true, ['sign']);
  } catch (cause) {
    throw new PkiError('cannot import the private key (expected a PKCS#8 ECDSA P-256 key)', { cause });
  }
}

/** A certificate or key could not be created, read or verified. */
export class PkiError extends Error {
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = 'PkiError';
  }
}
