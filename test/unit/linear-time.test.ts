import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import fc from 'fast-check';
import { parseAttestation } from '../../src/api/attestation.js';
import { readEscaped } from '../../src/api/escaped-pods.js';
import { TRUST_STATUS_ANNOTATION, readTrustStatus } from '../../src/api/trust-stamp.js';
import { readReport } from '../../src/api/webhook-status.js';
import { parseWatchEvent } from '../../src/drift/watch-event.js';
import { parseOriginals } from '../../src/mutation/stamp-revision.js';
import { readOriginalImages } from '../../src/runtime-agent/preflight/preflight-plan.js';
import { readRememberedNames } from '../../src/runtime-agent/pull-secret/renamed-copies.js';
import { parseDnsNames } from '../../src/drift/peer-identity.js';
import { parseImageReference } from '../../src/image/image-reference.js';
import { createRegistryRewriter } from '../../src/image/registry-rewrite.js';
import { errorLine } from '../../src/telemetry/error-line.js';
import { parseAuthChallenge } from '../../src/runtime-agent/preflight/auth-challenge.js';
import { credentialsKeyRegistry } from '../../src/runtime-agent/preflight/registry-credentials.js';
import { redactMessage } from '../../src/runtime-agent/workload-health/redact-message.js';

// DESIGN §14: what a tenant writes is read in time linear in its length. Each reader of such
// text gets long repetitive inputs (a unit repeated, after a prefix, both chosen by fast-check
// among the shapes that make backtracking regexes slow) at n and 8n characters: linear work
// takes about 8 times as long, quadratic 64, so the bound of 32 leaves room for a noisy machine
// and still catches the slower ones. Time is the process's CPU time, not the clock's: other
// processes on a shared machine then barely move it.

const GROWTH = 8;
const MAX_RATIO = 32;
/** The small input's calls take at least this long, so a timer's grain does not decide. */
const MIN_SAMPLE_MS = 3;
const RUNS = 3;

/** CPU time (ms) of `reps` calls. */
const timeOf = (f: (s: string) => unknown, input: string, reps: number): number => {
  const started = process.cpuUsage();
  for (let i = 0; i < reps; i++) f(input);
  const spent = process.cpuUsage(started);
  return (spent.user + spent.system) / 1000;
};

const repeatTo = (unit: string, n: number): string => unit.repeat(Math.ceil(n / unit.length)).slice(0, n);

/** Time of `f` on `prefix + unit…` of 8n characters over its time on n characters. */
function growth(f: (s: string) => unknown, prefix: string, unit: string, n: number): number {
  const small = prefix + repeatTo(unit, n);
  const large = prefix + repeatTo(unit, GROWTH * n);
  const quiet = (s: string): unknown => {
    try {
      return f(s);
    } catch {
      return undefined; // a refusal is an answer too: its time counts
    }
  };
  // Compiled before it is timed.
  for (let i = 0; i < 3; i++) {
    quiet(small);
    quiet(large);
  }
  let reps = 1;
  while (timeOf(quiet, small, reps) < MIN_SAMPLE_MS && reps < 1 << 16) reps *= 2;
  // Best of each, taken in turns, so a slow moment does not fall on one size only.
  let fast = Infinity;
  let slow = Infinity;
  for (let r = 0; r < RUNS; r++) {
    fast = Math.min(fast, timeOf(quiet, small, reps));
    slow = Math.min(slow, timeOf(quiet, large, reps));
  }
  return slow / fast;
}

/** Units that make backtracking patterns rescan: repeated prefixes of what a rule looks for. */
const HOSTILE_UNITS = [
  'auth-',
  'a:',
  '//',
  '-',
  'a://',
  'a=',
  'a="',
  '\\"',
  'Bearer ',
  'token=',
  ', a ',
  ' \n',
  'a.',
  '_',
  'BEGIN ',
  'DNS:',
  // A secret key word with its value masked already: random units cannot form the word.
  'token=***',
  'auth=*** ',
];
const SYNTAX = [...'aZ09 -_:/@=",;.\\\'*\t\n[]{}&+~'];
const unitArb = fc.oneof(
  fc.constantFrom(...HOSTILE_UNITS),
  fc.array(fc.constantFrom(...SYNTAX), { minLength: 1, maxLength: 6 }).map((cs) => cs.join('')),
);
const prefixArb = fc.constantFrom('', 'Bearer ', 'https://', 'password=', 'a/', '"', 'DNS:"');

interface Reader {
  readonly name: string;
  readonly read: (s: string) => unknown;
  /** The small size: 8n stays within the reader's own bound, so its scan is what is timed. */
  readonly n: number;
  /** Inputs known to have been slow before. */
  readonly examples?: readonly (readonly [string, string])[];
}

const rewrite = createRegistryRewriter({ 'docker.io': 'mirror.example.com/hub' });
// Exclusions a tenant's image is walked against: prefixes sharing their path, images by tag.
const excludingRewrite = createRegistryRewriter({ 'docker.io': 'mirror.example.com/hub' }, [
  'a',
  'a/a/a/a/b',
  'a/a/a/*',
  'library/a/a/a/c',
  'a/a:a',
  'a/a/a@sha256:' + 'a'.repeat(64),
]);

const READERS: readonly Reader[] = [
  {
    name: 'redactMessage, every character read (kubelet messages quote the image a tenant picks)',
    read: (s) => redactMessage(s, s.length),
    n: 256,
    examples: [
      ['', 'auth-'],
      ['', 'a://'],
      ['Bearer ', 'a'],
    ],
  },
  {
    // Values masked already, one after another without an end between them: each key's value
    // runs to the end of the text, so a scan of it per key would be quadratic.
    name: 'redactMessage on masked values repeated, every character read',
    read: (s) => redactMessage(s, s.length),
    n: 1024,
    examples: [
      ['', 'token=***'],
      ['', 'auth=*** '],
      ['', 'api-key:***'],
      ['password=', '***secret='],
    ],
  },
  {
    name: 'redactMessage as the follower calls it (cut to its bound before any rule)',
    read: (s) => redactMessage(s),
    n: 4096,
    examples: [['', 'auth-']],
  },
  {
    name: "parseAuthChallenge (a registry's WWW-Authenticate)",
    read: parseAuthChallenge,
    n: 500,
    examples: [
      ['Bearer ', 'a-'],
      ['Bearer ', 'a="'],
      ['', ', a '],
    ],
  },
  { name: "parseImageReference (a Pod's image)", read: parseImageReference, n: 120 },
  { name: "the registry rewrite of a Pod's image", read: rewrite, n: 120 },
  { name: "the registry rewrite of a Pod's image, with overrideExclusions", read: excludingRewrite, n: 120 },
  { name: "parseImageReference past its bound (a Pod's image)", read: parseImageReference, n: 4096 },
  {
    name: 'credentialsKeyRegistry (keys of a pull Secret in kyma-system)',
    read: credentialsKeyRegistry,
    n: 4096,
  },
  {
    name: 'errorLine (error messages that quote what a peer answered)',
    read: (s) => errorLine(new Error(s)),
    n: 4096,
    examples: [['', ' ']],
  },
  { name: "parseDnsNames (a client certificate's SANs)", read: parseDnsNames, n: 4096 },
  {
    name: "readReport (a runtime admin's status ConfigMap)",
    read: (s) => readReport({ data: { refusal: s, workloads: s, preflight: `{"x":"${s}"}` } }),
    n: 4096,
  },
  // The JSON readers get the text as it comes and inside valid JSON, so a parse runs through it.
  {
    name: "parseOriginals (a Pod's original-images annotation: the follower, the admission)",
    read: (s) => [parseOriginals(s), parseOriginals(JSON.stringify({ [s]: s, app: s }))],
    n: 4096,
  },
  {
    name: "readOriginalImages (a Pod's original-images annotation: the preflight)",
    read: (s) => [readOriginalImages(s), readOriginalImages(JSON.stringify({ [s]: s, app: s }))],
    n: 1024,
  },
  {
    name: "readRememberedNames (pullSecretNames in a runtime admin's status ConfigMap)",
    read: readRememberedNames,
    n: 250,
  },
  { name: 'readRememberedNames past its bound', read: readRememberedNames, n: 4096 },
  {
    name: "readTrustStatus (the restarter's annotation a runtime admin can write, read by the KCP)",
    read: (s) =>
      [s, JSON.stringify({ bundle: s, stalePods: 1, at: s })].map((text) =>
        readTrustStatus({ [TRUST_STATUS_ANNOTATION]: text }),
      ),
    n: 48,
  },
  {
    name: "readEscaped (escapedPods in a runtime admin's status ConfigMap, read by the KCP)",
    read: (s) => [readEscaped(s), readEscaped(JSON.stringify({ at: s, running: 1 }))],
    n: 96,
  },
  {
    name: 'parseAttestation (a body a holder of the drift key posts to the KCP)',
    read: (s) => {
      const ref = { apiVersion: s, kind: s, namespace: s, name: s, resourceVersion: s };
      return [s, JSON.stringify({ objects: [ref, ref], challenge: s })].map((body) => {
        try {
          return parseAttestation(body);
        } catch {
          return undefined;
        }
      });
    },
    n: 4096,
  },
  {
    name: 'parseWatchEvent (a drift report a holder of the drift key posts to the KCP)',
    read: (s) =>
      [
        s,
        JSON.stringify({ watched: { Namespace: s, Name: s }, watchedGvk: { group: s, version: s, kind: s } }),
      ].map((body) => {
        try {
          return parseWatchEvent(body);
        } catch {
          return undefined;
        }
      }),
    n: 1024,
  },
];

describe('every reader of tenant text takes time linear in its length', () => {
  for (const reader of READERS)
    test(reader.name, () => {
      fc.assert(
        fc.property(prefixArb, unitArb, (prefix, unit) => {
          const ratio = growth(reader.read, prefix, unit, reader.n);
          assert.ok(
            ratio < MAX_RATIO,
            `${JSON.stringify(prefix)} + ${JSON.stringify(unit)}… grew ${ratio.toFixed(1)}× for ${GROWTH}× the length`,
          );
        }),
        { numRuns: 4, examples: (reader.examples ?? []).map(([p, u]) => [p, u]), endOnFailure: true },
      );
    });
});
