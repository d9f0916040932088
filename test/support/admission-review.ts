/** The kind and resource of a core/v1 object in an AdmissionReview's request. */
export const coreKind = (kind: string, resource: string) => ({
  kind: { group: '', version: 'v1', kind },
  resource: { group: '', version: 'v1', resource },
});

/** An `admission.k8s.io/v1` AdmissionReview carrying `request` as it is, as JSON text. */
export const admissionReview = (request: Record<string, unknown>): string =>
  JSON.stringify({ apiVersion: 'admission.k8s.io/v1', kind: 'AdmissionReview', request });

/** What differs between the AdmissionReviews the tests send. */
export interface PodReviewOptions {
  readonly uid?: string;
  readonly namespace?: string;
  readonly name?: string;
  readonly operation?: 'CREATE' | 'UPDATE';
}

/** An `admission.k8s.io/v1` AdmissionReview of a Pod, as JSON text (`object` as given, even malformed). */
export function podReview(object: unknown, o: PodReviewOptions = {}): string {
  return admissionReview({
    uid: o.uid ?? 'u',
    ...coreKind('Pod', 'pods'),
    namespace: o.namespace ?? 'default',
    name: o.name ?? 'p',
    operation: o.operation ?? 'CREATE',
    object,
  });
}
