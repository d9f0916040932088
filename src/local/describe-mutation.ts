import type { V1Pod } from '@kubernetes/client-node';

interface PodLike {
  metadata?: { annotations?: Record<string, string> };
  spec?: V1Pod['spec'];
}

/**
 * Lines that say what the webhook changed between the Pod as sent and as stored (pure; for
 * people watching the local landscape, not a contract).
 */
export function describeMutation(before: PodLike, after: PodLike): string[] {
  const lines: string[] = [];
  const b = before.spec?.containers ?? [];
  const a = after.spec?.containers ?? [];
  // Only the trust bundle's volumes: on a node the API server also mounts the service account token.
  const bundleVolumes = new Set(
    (after.spec?.volumes ?? [])
      .filter((v) => v.projected?.sources?.some((s) => s.clusterTrustBundle))
      .map((v) => v.name),
  );
  a.forEach((c, i) => {
    const old = b[i];
    if (old && old.image !== c.image)
      lines.push(`registry rewrite   ${c.name}: ${old.image ?? ''} → ${c.image ?? ''}`);
    const fips = c.env?.find((e) => e.name === 'KYMA_FIPS_MODE_ENABLED');
    if (fips && !old?.env?.some((e) => e.name === 'KYMA_FIPS_MODE_ENABLED'))
      lines.push(`FIPS mode          ${c.name}: env KYMA_FIPS_MODE_ENABLED=${fips.value ?? ''}`);
    for (const m of c.volumeMounts ?? []) {
      if (bundleVolumes.has(m.name) && !old?.volumeMounts?.some((o) => o.mountPath === m.mountPath))
        lines.push(
          `trust bundle mount ${c.name}: ${m.name} at ${m.mountPath}${m.readOnly ? ' (read-only)' : ''}`,
        );
    }
  });
  for (const v of after.spec?.volumes ?? []) {
    const ctb = v.projected?.sources?.find((s) => s.clusterTrustBundle)?.clusterTrustBundle;
    if (ctb && !before.spec?.volumes?.some((o) => o.name === v.name))
      lines.push(`trust bundle       volume ${v.name}: ClusterTrustBundle ${ctb.name ?? ''} → ${ctb.path}`);
  }
  for (const s of after.spec?.imagePullSecrets ?? []) {
    if (!before.spec?.imagePullSecrets?.some((o) => o.name === s.name))
      lines.push(`pull secret        imagePullSecrets += ${s.name ?? ''}`);
  }
  const mark = after.metadata?.annotations?.['rt-bootstrapper.kyma-project.io/defaulted'];
  if (mark) lines.push(`marked             rt-bootstrapper.kyma-project.io/defaulted: "${mark}"`);
  return lines;
}
