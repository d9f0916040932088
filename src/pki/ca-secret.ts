import type { CoreV1Api } from '@kubernetes/client-node';
import { statusCodeOf } from '../kube/kube-errors.js';
import {
  createCertificateAuthority,
  loadCertificateAuthority,
  type CertificateAuthority,
} from './certificate-authority.js';

/** Where the controller keeps its CA on the KCP. */
export interface CaSecretRef {
  readonly namespace: string;
  readonly name: string;
}

/**
 * Loads the CA from its KCP Secret, creating it (ECDSA) on first start. Two replicas racing on
 * the first start both end up with the one that was stored first.
 */
export async function loadOrCreateCa(
  core: CoreV1Api,
  ref: CaSecretRef,
  commonName: string,
): Promise<CertificateAuthority> {
  try {
    const s = await core.readNamespacedSecret(ref);
    return await fromSecretData(s.data ?? {}, ref);
  } catch (error) {
    if (statusCodeOf(error) !== 404) throw error;
  }
  const ca = await createCertificateAuthority({ commonName });
  try {
    await core.createNamespacedSecret({
      namespace: ref.namespace,
      body: {
        metadata: { name: ref.name, labels: { 'app.kubernetes.io/managed-by': 'rt-bootstrapper' } },
        type: 'kubernetes.io/tls',
        data: {
          'tls.crt': Buffer.from(ca.certPem).toString('base64'),
          'tls.key': Buffer.from(ca.keyPem).toString('base64'),
        },
      },
    });
    return ca;
  } catch (error) {
    if (statusCodeOf(error) !== 409) throw error;
    const s = await core.readNamespacedSecret(ref);
    return fromSecretData(s.data ?? {}, ref);
  }
}

async function fromSecretData(data: Record<string, string>, ref: CaSecretRef): Promise<CertificateAuthority> {
  const cert = data['tls.crt'];
  const key = data['tls.key'];
  if (!cert || !key) throw new Error(`CA Secret ${ref.namespace}/${ref.name} lacks tls.crt or tls.key`);
  return loadCertificateAuthority(
    Buffer.from(cert, 'base64').toString(),
    Buffer.from(key, 'base64').toString(),
  );
}
