import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { createCertificateAuthority, type CertificateAuthority } from '../pki/certificate-authority.js';
import { exportPrivateKeyPem, exportPublicKeyPem, generateKeyPair } from '../pki/crypto-provider.js';
import { issueCertificate } from '../pki/issue-certificate.js';

/** Files of one cluster's PKI, as kube-apiserver flags take them. */
export interface ClusterPkiFiles {
  readonly caCert: string;
  readonly servingCert: string;
  readonly servingKey: string;
  readonly serviceAccountKey: string;
  readonly serviceAccountPub: string;
}

/** One cluster's PKI: a CA, the API server's serving certificate and an admin client certificate. */
export interface ClusterPki {
  readonly ca: CertificateAuthority;
  readonly files: ClusterPkiFiles;
  readonly adminCertPem: string;
  readonly adminKeyPem: string;
}

/** Generates a cluster's PKI in-process and writes the server side of it into `dir`. */
export async function createClusterPki(dir: string, clusterName: string): Promise<ClusterPki> {
  const ca = await createCertificateAuthority({ commonName: `${clusterName}-ca` });
  const serving = await issueCertificate(ca, {
    commonName: 'kube-apiserver',
    dnsNames: ['localhost', 'kubernetes', 'kubernetes.default', 'kubernetes.default.svc'],
    ipAddresses: ['127.0.0.1'],
    usage: 'server',
  });
  const admin = await issueCertificate(ca, {
    commonName: 'admin',
    organizations: ['system:masters'],
    usage: 'client',
  });
  const saKeys = await generateKeyPair();
  const files: ClusterPkiFiles = {
    caCert: join(dir, 'ca.crt'),
    servingCert: join(dir, 'apiserver.crt'),
    servingKey: join(dir, 'apiserver.key'),
    serviceAccountKey: join(dir, 'sa.key'),
    serviceAccountPub: join(dir, 'sa.pub'),
  };
  await Promise.all([
    writeFile(files.caCert, ca.certPem),
    writeFile(files.servingCert, serving.certPem),
    writeFile(files.servingKey, serving.keyPem, { mode: 0o600 }),
    exportPrivateKeyPem(saKeys.privateKey).then((pem) =>
      writeFile(files.serviceAccountKey, pem, { mode: 0o600 }),
    ),
    exportPublicKeyPem(saKeys.publicKey).then((pem) => writeFile(files.serviceAccountPub, pem)),
  ]);
  return { ca, files, adminCertPem: admin.certPem, adminKeyPem: admin.keyPem };
}
