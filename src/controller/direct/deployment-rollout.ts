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
    readonly replicas?: number;
    readonly updatedReplicas?: number;
    readonly readyReplicas?: number;
    readonly availableReplicas?: number;
  };
}

/** Where a Deployment's rollout stands. */
export interface RolloutState {
  /** Its current generation observed, and every wanted replica updated and available. */
  readonly ready: boolean;
  /**
   * Not yet available, but every wanted replica of the current template is Ready and no Pod of an
   * older one is left: only `minReadySeconds` is missing. That wait hands endpoints over from old
   * Pods to new ones; with no old Pod there is nothing to hand over, so the webhook may be
   * registered as soon as the Service lists the new Pods (see {@link readyEndpointsOf}).
   */
  readonly newPodsReady: boolean;
  /** The Pods the Deployment wants. */
  readonly want: number;
  /** What the status says of it (changes whenever the rollout moves). */
  readonly message: string;
}

/** Where the rollout of `d` stands, as the deployment controller reports it (pure). */
export function deploymentRollout(d: RolloutDeployment): RolloutState {
  const want = d.spec?.replicas ?? 1;
  const s = d.status ?? {};
  const observed = (s.observedGeneration ?? 0) >= (d.metadata?.generation ?? 0);
  const updated = s.updatedReplicas ?? 0;
  const ready = observed && updated >= want && (s.availableReplicas ?? 0) >= want;
  const newPodsReady =
    !ready && observed && updated >= want && (s.replicas ?? 0) <= updated && (s.readyReplicas ?? 0) >= want;
  return {
    ready,
    newPodsReady,
    want,
    message: ready
      ? `${s.availableReplicas ?? 0}/${want} replicas available`
      : `waiting for the rollout: ${updated} updated, ${s.readyReplicas ?? 0} ready, ${s.availableReplicas ?? 0} available of ${want}, ${s.replicas ?? 0} Pods in all${observed ? '' : ' (not yet observed)'}`,
  };
}

/** The EndpointSlices of a Service as far as readiness goes. */
export interface ServiceEndpointSlices {
  readonly items?: readonly {
    readonly endpoints?: readonly { readonly conditions?: { readonly ready?: boolean | null } }[] | null;
  }[];
}

/**
 * The endpoints the Service's slices list as ready (pure): the addresses the API server calls a
 * webhook on. A ready condition left unset counts as ready, as the EndpointSlice API says.
 */
export function readyEndpointsOf(slices: ServiceEndpointSlices): number {
  let n = 0;
  for (const slice of slices.items ?? [])
    for (const e of slice.endpoints ?? []) if (e.conditions?.ready !== false) n++;
  return n;
}
