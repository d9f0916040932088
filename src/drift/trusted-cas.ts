import { X509Certificate } from 'node:crypto';
import { findPemBlocks, PEM_FIELD_MAX_BLOCKS, PEM_FIELD_MAX_BYTES } from '../pki/pem-scan.js';

/** The listener's options are unusable (no trusted CA, a CA that does not parse). */
export class EventListenerError extends Error {
  override readonly name = 'EventListenerError';
}

/**
 * The trusted CA certificates of a list of PEM texts (each may hold several, each at most
 * {@link PEM_FIELD_MAX_BYTES} and {@link PEM_FIELD_MAX_BLOCKS} blocks); throws EventListenerError.
 * Scanned in linear time (../pki/pem-scan.ts).
 */
export function parseCas(pems: readonly string[]): X509Certificate[] {
  const blocks = pems.flatMap((pem, i) => {
    if (pem.length > PEM_FIELD_MAX_BYTES)
      throw new EventListenerError(`trusted CA text #${i} is larger than ${PEM_FIELD_MAX_BYTES} bytes`);
    const found = findPemBlocks(pem, 'CERTIFICATE', PEM_FIELD_MAX_BLOCKS);
    if (found.truncated)
      throw new EventListenerError(
        `trusted CA text #${i} holds more than ${PEM_FIELD_MAX_BLOCKS} certificates`,
      );
    return found.blocks.map((b) => b.text);
  });
  if (blocks.length === 0) throw new EventListenerError('at least one trusted CA certificate is needed');
  return blocks.map((pem, i) => {
    try {
      return new X509Certificate(pem);
    } catch (cause) {
      throw new EventListenerError(`trusted CA certificate #${i} does not parse`, { cause });
    }
  });
}
