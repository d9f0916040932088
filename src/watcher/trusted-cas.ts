import { X509Certificate } from 'node:crypto';

/** The listener's options are unusable (no trusted CA, a CA that does not parse). */
export class EventListenerError extends Error {
  override readonly name = 'EventListenerError';
}

/** The trusted CA certificates of a list of PEM texts (each may hold several); throws EventListenerError. */
export function parseCas(pems: readonly string[]): X509Certificate[] {
  const blocks = pems.flatMap((pem) => pem.match(PEM_CERTIFICATE) ?? []);
  if (blocks.length === 0) throw new EventListenerError('at least one trusted CA certificate is needed');
  return blocks.map((pem, i) => {
    try {
      return new X509Certificate(pem);
    } catch (cause) {
      throw new EventListenerError(`trusted CA certificate #${i} does not parse`, { cause });
    }
  });
}

const PEM_CERTIFICATE = /-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g;
