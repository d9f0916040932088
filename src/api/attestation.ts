/**
 * The attestation of the drift channel (docs/attestation.md): a runtime tells the KCP, now and
 * then, the resourceVersion of every object the KCP manages there. The KCP compares them with the
 * ones its own writes and reads left; equal means nothing was written since, so the periodic
 * resync's forced re-apply of that runtime would change nothing and is skipped. Pure: wire format,
 * parsing and the digest both ends agree on.
 */
import { createHash } from 'node:crypto';
import { z } from 'zod';

/** Where the runtime side POSTs attestations on the KCP listener (beside the WatchEvent path). */
export const ATTESTATION_PATH = '/v2/rt-bootstrapper/attestation';

/** One object the KCP manages on a runtime. `namespace` is empty for cluster-scoped kinds. */
export interface ManagedRef {
  readonly apiVersion: string;
  readonly kind: string;
  readonly namespace: string;
  readonly name: string;
}

/** A managed object as the runtime holds it: `resourceVersion` is empty when absent or unreadable. */
export interface AttestedObject extends ManagedRef {
  readonly resourceVersion: string;
}

/** The body a runtime POSTs. */
export interface Attestation {
  readonly objects: readonly AttestedObject[];
  /**
   * The `challenge` of the KCP's previous answer, echoed: a nonce that counts once, in the resync
   * period it was issued in or the next, so an attestation replayed skips nothing. Absent in a
   * runtime's first attestation (and from releases before challenges: those never let a runtime
   * be skipped).
   */
  readonly challenge?: string | undefined;
}

/** The KCP's answer (200): which objects to attest next time, and when. */
export interface AttestationAnswer {
  /** Whether the objects matched the KCP's record (informational: the KCP acts on it itself). */
  readonly inSync: boolean;
  /** The objects to read for the next attestation (empty while the KCP has no complete record). */
  readonly check: readonly ManagedRef[];
  /** Attest again after this many seconds (the runtime adds jitter). */
  readonly nextAfterSeconds: number;
  /** To echo in the next attestation (absent from KCPs before challenges). */
  readonly challenge?: string | undefined;
}

/** A body that is not a valid attestation or answer; `field` names the first offending field (HTTP 400). */
export class AttestationError extends Error {
  override readonly name = 'AttestationError';

  constructor(
    message: string,
    readonly field: string,
    options?: ErrorOptions,
  ) {
    super(message, options);
  }
}

/** Objects a runtime may attest: a plan is about 20; the bound keeps a body small. */
export const MAX_ATTESTED_OBJECTS = 200;

const printable = /^[\x21-\x7e]*$/;
const text = (max: number) => z.string().max(max).regex(printable, 'must be printable ASCII without spaces');
const required = (max: number) => text(max).min(1, 'must not be empty');

const refShape = {
  apiVersion: required(253),
  kind: required(63),
  namespace: text(63),
  name: required(253),
};
const challengeShape = text(64).optional();
const attestationSchema = z.object({
  objects: z.array(z.object({ ...refShape, resourceVersion: text(64) })).max(MAX_ATTESTED_OBJECTS),
  challenge: challengeShape,
});
const answerSchema = z.object({
  inSync: z.boolean(),
  check: z.array(z.object(refShape)).max(MAX_ATTESTED_OBJECTS),
  nextAfterSeconds: z.number().int().min(1).max(86_400),
  challenge: challengeShape,
});

function parseWith<T>(schema: z.ZodType<T>, what: string, body: Buffer | string): T {
  let json: unknown;
  try {
    json = JSON.parse(typeof body === 'string' ? body : body.toString('utf8'));
  } catch (cause) {
    throw new AttestationError(`not ${what}: (root): body is not JSON`, '(root)', { cause });
  }
  const parsed = schema.safeParse(json);
  if (!parsed.success) {
    const first = parsed.error.issues[0];
    const field = first && first.path.length > 0 ? first.path.join('.') : '(root)';
    throw new AttestationError(`not ${what}: ${field}: ${first?.message ?? 'invalid'}`, field, {
      cause: parsed.error,
    });
  }
  return parsed.data;
}

/** Parses a runtime's body; throws AttestationError naming the field. */
export function parseAttestation(body: Buffer | string): Attestation {
  return parseWith(attestationSchema, 'an attestation', body);
}

/** Parses the KCP's answer; throws AttestationError naming the field. */
export function parseAttestationAnswer(body: Buffer | string): AttestationAnswer {
  return parseWith(answerSchema, 'an attestation answer', body);
}

/** The key of a managed object: `apiVersion/kind/namespace/name`. */
export function refKey(ref: ManagedRef): string {
  return `${ref.apiVersion}/${ref.kind}/${ref.namespace}/${ref.name}`;
}

/**
 * The digest of objects with their resourceVersions, independent of their order (a duplicate
 * counts once, the last one wins). Both ends compute it the same way: equal digests mean every
 * object is at the same resourceVersion.
 */
export function versionsDigest(objects: Iterable<AttestedObject>): string {
  const byKey = new Map<string, string>();
  for (const o of objects) byKey.set(refKey(o), o.resourceVersion);
  const lines = [...byKey].map(([k, rv]) => `${k}=${rv}`).sort();
  return createHash('sha256').update(lines.join('\n')).digest('hex');
}
