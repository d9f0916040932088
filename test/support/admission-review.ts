/** What differs between the AdmissionReviews the tests send. */
export interface PodReviewOptions {
  readonly uid?: string;
  readonly namespace?: string;
  readonly name?: string;
  readonly operation?: 'CREATE' | 'UPDATE';
}

/** An `admission.k8s.io/v1` AdmissionReview of a Pod, as JSON text (`object` as given, even malformed). */
export function podReview(object: unknown, o: PodReviewOptions = {}): string {
  return JSON.stringify({
    apiVersion: 'admission.k8s.io/v1',
    kind: 'AdmissionReview',
    request: {
      uid: o.uid ?? 'u',
      kind: { group: '', version: 'v1', kind: 'Pod' },
      resource: { group: '', version: 'v1', resource: 'pods' },
      namespace: o.namespace ?? 'default',
      name: o.name ?? 'p',
      operation: o.operation ?? 'CREATE',
      object,
    },
  });
}
