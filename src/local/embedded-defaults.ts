import { readFileSync } from 'node:fs';

// config/ ships with the package (package.json "files"), one level above src/ and dist/.
const configDir = new URL('../../config/', import.meta.url);

/** The local landscape's webhook configuration (the seed's: replace.me → ghcr.io, all features). */
export function localWebhookConfigText(): string {
  return readFileSync(new URL('local-webhook-config.json', configDir), 'utf8');
}

/** The seed example Pod's image, before the webhook rewrites its registry. */
export const SEED_IMAGE = 'replace.me/kyma-project/rt-bootstrapper/pause:e2e';

/** The seed example's Pod: the Deployment template of seed 000 with its four opt-in annotations. */
export function seedExamplePod(name = 'pause-test1'): {
  apiVersion: 'v1';
  kind: 'Pod';
  metadata: { name: string; labels: Record<string, string>; annotations: Record<string, string> };
  spec: { containers: { name: string; image: string }[] };
} {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: {
      name,
      labels: { app: 'pause-test1' },
      annotations: {
        'rt-cfg.kyma-project.io/alter-img-registry': 'true',
        'rt-cfg.kyma-project.io/add-img-pull-secret': 'true',
        'rt-cfg.kyma-project.io/add-cluster-trust-bundle': 'true',
        'rt-cfg.kyma-project.io/set-fips-mode': 'true',
      },
    },
    spec: { containers: [{ name: 'pause', image: SEED_IMAGE }] },
  };
}
