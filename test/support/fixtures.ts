import { readFileSync } from 'node:fs';
import { parse } from 'yaml';
import type { SyncSources } from '../../src/controller/direct/sync-set.js';
import type { Pod } from '../../src/mutation/pod.js';
import type { AdmissionRequest } from '../../src/webhook/admission-review.js';
import { admissionReview, coreKind } from './admission-review.js';

const fixture = (name: string): string =>
  readFileSync(new URL(`../fixtures/${name}`, import.meta.url), 'utf8');

/** The seed's Pod before the webhook (the Deployment's template as a Pod). */
export const seedPodBefore = (): Pod => parse(fixture('seed-pod-before.yaml')) as Pod;
/** The seed's Pod after the webhook. */
export const seedPodAfter = (): Pod => parse(fixture('seed-pod-after.yaml')) as Pod;
/** The seed's webhook configuration (JSON text). */
export const seedConfigText = (): string => fixture('seed-config.json');

/** A consistent set of KCP sources at version `v-1` (the seed's config), `over` replacing parts. */
export const syncSources = (over: Partial<SyncSources> = {}): SyncSources => ({
  version: 'v-1',
  pullSecret: {
    metadata: { name: 'kcp-pull', namespace: 'kcp-system' },
    type: 'kubernetes.io/dockerconfigjson',
    data: { '.dockerconfigjson': 'e30=' },
  },
  clusterTrustBundle: {
    metadata: { name: 'rt-bootstrapper-k3d.test:ctb:1' },
    spec: { signerName: 'rt-bootstrapper-k3d.test/ctb', trustBundle: 'PEM' },
  },
  configMap: {
    metadata: { name: 'rt-bootstrapper-config', namespace: 'kcp-system' },
    data: { 'rt-bootstrapper-config.json': seedConfigText() },
  },
  ...over,
});

/**
 * An `admission.k8s.io/v1` AdmissionReview for creating `object` in namespace `default` (uid
 * `u-1`), with `extra` replacing or adding request members.
 */
export const podReview = (object: unknown, extra: Record<string, unknown> = {}): string =>
  admissionReview({
    uid: 'u-1',
    ...coreKind('Pod', 'pods'),
    namespace: 'default',
    operation: 'CREATE',
    object,
    ...extra,
  });

/** The seed's Pod created in kyma-system (`uid` as given), as the handler reads it once decoded. */
export const seedPodCreate = (uid = 'u1'): AdmissionRequest => ({
  uid,
  resource: coreKind('Pod', 'pods').resource,
  subResource: '',
  namespace: 'kyma-system',
  name: '',
  operation: 'CREATE',
  dryRun: false,
  object: seedPodBefore(),
  oldObject: undefined,
});
