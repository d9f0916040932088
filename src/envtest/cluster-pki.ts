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
  /** The API server's client certificate towards kubelets (logs, exec). */
  readonly kubeletClientCert: string;
  readonly kubeletClientKey: string;
}

/** One cluster's PKI: a CA, the API server's serving certificate and an admin client certificate. */
export interface ClusterPki {
  readonly ca: CertificateAuthority;
  readonly files: ClusterPkiFiles;
  readonly adminCertPem: string;
  readonly adminKeyPem: string;
}

/**
 * Generates a cluster's PKI in-process and writes the server side of it into `dir`.
 * `serviceIps` are further addresses of the API server (a node's ClusterIP of `kubernetes`).
 */
export async function createClusterPki(
  dir: string,
  clusterName: string,
  serviceIps: readonly string[] = [],
): Promise<ClusterPki> {
  const ca = await createCertificateAuthority({ commonName: `${clusterName}-ca` });
  const serving = await issueCertificate(ca, {
    commonName: 'kube-apiserver',
    dnsNames: [
      'localhost',
      'kubernetes',
      'kubernetes.default',
      'kubernetes.default.svc',
      'kubernetes.default.svc.cluster.local',
    ],
    ipAddresses: ['127.0.0.1', ...serviceIps],
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
    kubeletClientCert: join(dir, 'apiserver-kubelet-client.crt'),
    kubeletClientKey: join(dir, 'apiserver-kubelet-client.key'),
  };
  await Promise.all([
    writeFile(files.caCert, ca.certPem),
    writeFile(files.servingCert, serving.certPem),
    writeFile(files.servingKey, serving.keyPem, { mode: 0o600 }),
    // The admin identity serves as the API server's towards kubelets.
    writeFile(files.kubeletClientCert, admin.certPem),
    writeFile(files.kubeletClientKey, admin.keyPem, { mode: 0o600 }),
    exportPrivateKeyPem(saKeys.privateKey).then((pem) =>
      writeFile(files.serviceAccountKey, pem, { mode: 0o600 }),
    ),
    exportPublicKeyPem(saKeys.publicKey).then((pem) => writeFile(files.serviceAccountPub, pem)),
  ]);
  return { ca, files, adminCertPem: admin.certPem, adminKeyPem: admin.keyPem };
}
