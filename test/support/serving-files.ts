/** The webhook's serving certificate for 127.0.0.1 and localhost written to files, as `rtb webhook --tls-cert/--tls-key` reads them. */
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import {
  createCertificateAuthority,
  type CertificateAuthority,
} from '../../src/pki/certificate-authority.js';
import { issueCertificate } from '../../src/pki/issue-certificate.js';

/** The CA that signed the files, and the files' paths. */
export interface ServingFiles {
  readonly ca: CertificateAuthority;
  readonly certFile: string;
  readonly keyFile: string;
}

/** Creates a CA named `caName` and writes a serving certificate by it for 127.0.0.1 and localhost to `dir`'s tls.crt and tls.key. */
export async function writeServingFiles(dir: string, caName: string): Promise<ServingFiles> {
  const ca = await createCertificateAuthority({ commonName: caName });
  const serving = await issueCertificate(ca, {
    commonName: 'rt-bootstrapper-webhook',
    dnsNames: ['localhost'],
    ipAddresses: ['127.0.0.1'],
    usage: 'server',
  });
  const certFile = join(dir, 'tls.crt');
  const keyFile = join(dir, 'tls.key');
  await writeFile(certFile, serving.certPem);
  await writeFile(keyFile, serving.keyPem);
  return { ca, certFile, keyFile };
}
