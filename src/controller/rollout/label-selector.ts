/** A metav1.LabelSelector (matchLabels and matchExpressions), as a RolloutPolicy wave carries it. */
export interface LabelSelector {
  readonly matchLabels?: Readonly<Record<string, string>>;
  readonly matchExpressions?: readonly {
    readonly key: string;
    readonly operator: 'In' | 'NotIn' | 'Exists' | 'DoesNotExist';
    readonly values?: readonly string[];
  }[];
}

/**
 * Whether `labels` match `selector` (pure), with metav1.LabelSelector's semantics: every
 * requirement must hold; an empty selector matches everything.
 */
export function matchesSelector(
  selector: LabelSelector,
  labels: Readonly<Record<string, string>> | undefined,
): boolean {
  const have = labels ?? {};
  for (const [k, v] of Object.entries(selector.matchLabels ?? {})) if (have[k] !== v) return false;
  for (const e of selector.matchExpressions ?? []) {
    const value = have[e.key];
    const values = e.values ?? [];
    const ok =
      e.operator === 'In'
        ? value !== undefined && values.includes(value)
        : e.operator === 'NotIn'
          ? value === undefined || !values.includes(value)
          : e.operator === 'Exists'
            ? value !== undefined
            : value === undefined;
    if (!ok) return false;
  }
  return true;
}
