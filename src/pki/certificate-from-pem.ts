/**
 * An @peculiar/x509 certificate from PEM text that may be hostile. The library's own PEM reader
 * is a regular expression with nested quantifiers over header lines: about thirty lines of
 * ` a: b` after a BEGIN line take it seconds, forty lines much longer. So the text never reaches
 * it: the first CERTIFICATE block is found by the linear scanner (./pem-scan.ts, size-limited)
 * and the library is handed the DER bytes.
 */
import { PkiError, x509 } from './crypto-provider.js';
import { firstPemDer } from './pem-scan.js';

/** The first certificate in `pem`; throws PkiError when there is none or it does not parse. */
export function certificateFromPem(pem: string): x509.X509Certificate {
  const der = firstPemDer(pem, 'CERTIFICATE');
  if (der === undefined || der.length === 0) throw new PkiError('no CERTIFICATE block in the PEM text');
  try {
    return new x509.X509Certificate(der);
  } catch (cause) {
    throw new PkiError('the certificate does not parse', { cause });
  }
}
