/** A kube-apiserver's options with placeholder paths, for tests of the flags it is given. */
import type { KubeApiserverOptions } from '../../../src/envtest/kube-apiserver.js';

/** Every option but the minor: placeholder binary, directory, etcd, port and PKI files. */
export const APISERVER_BASE: Omit<KubeApiserverOptions, 'kubernetes'> = {
  binary: 'kube-apiserver',
  dir: '/d',
  etcdUrl: 'http://127.0.0.1:1',
  etcdPrefix: '/c',
  port: 1,
  pki: {
    caCert: 'ca',
    servingCert: 's',
    servingKey: 'k',
    serviceAccountKey: 'sa',
    serviceAccountPub: 'sp',
    kubeletClientCert: 'kc',
    kubeletClientKey: 'kk',
  },
};
