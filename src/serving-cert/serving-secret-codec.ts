/**
 * The serving Secret as the protocol reads it (decoded keys, annotations) and the Secret body a
 * write sends: the current object with our four keys and our annotations replaced, everything
 * else (its type, other keys, labels) kept.
 */
import type { V1Secret } from '@kubernetes/client-node';
import type { ServingSecretContent } from './serving-secret-state.js';

/** The Secret's keys of the protocol. */
export const TLS_CRT = 'tls.crt';
export const TLS_KEY = 'tls.key';
export const CA_CRT = 'ca.crt';
export const CA_KEY = 'ca.key';

const decode = (v: string | undefined): string | undefined =>
  v === undefined ? undefined : Buffer.from(v, 'base64').toString('utf8');
const encode = (v: string): string => Buffer.from(v, 'utf8').toString('base64');

/** The protocol's view of a Secret (undefined: none). */
export function readServingSecret(secret: V1Secret | undefined): ServingSecretContent | undefined {
  if (!secret) return undefined;
  const d = secret.data ?? {};
  return {
    tlsCrt: decode(d[TLS_CRT]),
    tlsKey: decode(d[TLS_KEY]),
    caCrt: decode(d[CA_CRT]),
    caKey: decode(d[CA_KEY]),
    annotations: secret.metadata?.annotations ?? {},
  };
}

/**
 * The body that turns `current` (undefined: create) into `next`. An update carries the
 * resourceVersion it was planned from, so a concurrent write makes it fail with 409.
 */
export function servingSecretBody(
  ref: { readonly namespace: string; readonly name: string },
  current: V1Secret | undefined,
  next: ServingSecretContent,
): V1Secret {
  const { [CA_KEY]: _replaced, ...data }: Record<string, string> = { ...current?.data };
  // The tls keys stay even when empty: a kubernetes.io/tls Secret must have them.
  data[TLS_CRT] = encode(next.tlsCrt ?? '');
  data[TLS_KEY] = encode(next.tlsKey ?? '');
  data[CA_CRT] = encode(next.caCrt ?? '');
  if (next.caKey !== undefined) data[CA_KEY] = encode(next.caKey);
  return {
    apiVersion: 'v1',
    kind: 'Secret',
    type: current?.type ?? 'Opaque',
    metadata: {
      ...current?.metadata,
      // The server keeps the managed fields; sending back what we read could only be stale.
      managedFields: undefined,
      name: ref.name,
      namespace: ref.namespace,
      labels: { 'app.kubernetes.io/managed-by': 'rt-bootstrapper', ...current?.metadata?.labels },
      annotations: { ...next.annotations },
    },
    data,
  };
}
