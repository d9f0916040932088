/** The webhook Deployment as far as its rollout goes: what the read and the watch both look at. */
export interface RolloutDeployment {
  readonly metadata?: {
    readonly generation?: number;
    readonly resourceVersion?: string;
    readonly annotations?: Readonly<Record<string, string>>;
  };
  readonly spec?: { readonly replicas?: number };
  readonly status?: {
    readonly observedGeneration?: number;
    readonly updatedReplicas?: number;
    readonly availableReplicas?: number;
  };
}

/** Where a Deployment's rollout stands. */
export interface RolloutState {
  /** Its current generation observed, and every wanted replica updated and available. */
  readonly ready: boolean;
  /** What the status says of it (changes whenever the rollout moves). */
  readonly message: string;
}

/** Where the rollout of `d` stands, as the deployment controller reports it (pure). */
export function deploymentRollout(d: RolloutDeployment): RolloutState {
  const want = d.spec?.replicas ?? 1;
  const s = d.status ?? {};
  const observed = (s.observedGeneration ?? 0) >= (d.metadata?.generation ?? 0);
  const ready = observed && (s.updatedReplicas ?? 0) >= want && (s.availableReplicas ?? 0) >= want;
  return {
    ready,
    message: ready
      ? `${s.availableReplicas ?? 0}/${want} replicas available`
      : `waiting for the rollout: ${s.updatedReplicas ?? 0} updated, ${s.availableReplicas ?? 0} available of ${want}${observed ? '' : ' (not yet observed)'}`,
  };
}
