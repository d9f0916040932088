// PEM parsing of hostile text (issue 25): how long the KCP's readers take on 1 MB of junk.
//
//   npx tsx bench/pem-parse.ts
//
// In one process, one after the other, each reader is given text an admin of a runtime (or of
// the KCP) could write, and timed (median of BENCH_PEM_RUNS runs, default 15). The same-run
// baseline is a plain scan of the same bytes (`indexOf` of a string that is not there): what
// reading the text once costs. The pattern the scanner replaced is timed on smaller inputs only
// (it is quadratic: 1 MB takes it many seconds), and so is @peculiar/x509's own PEM reader on a
// few header-like lines (exponential). The figures are printed, never asserted.
import { performance } from 'node:perf_hooks';
import { validateClusterTrustBundle } from '../src/controller/sources/source-validation.js';
import { createCertificateAuthority } from '../src/pki/certificate-authority.js';
import { certificateFromPem } from '../src/pki/certificate-from-pem.js';
import { x509 } from '../src/pki/crypto-provider.js';
import { parseCertificates } from '../src/pki/pem-certificates.js';
import { findPemBlocks, PEM_FIELD_MAX_BYTES, scanPemStrict } from '../src/pki/pem-scan.js';
import { parseCas } from '../src/drift/trusted-cas.js';
import { envNumber, isMain, say as print } from './support/env.js';

/** One reader on one input. */
export interface PemTiming {
  readonly what: string;
  readonly bytes: number;
  readonly medianMs: number;
  /** Its outcome, in a few words (refused, garbage, how many blocks). */
  readonly outcome: string;
}

/** The run's figures. */
export interface PemFigures {
  readonly runs: number;
  readonly timings: readonly PemTiming[];
}

const BEGIN = '-----BEGIN CERTIFICATE-----';
const LAZY = /-----BEGIN CERTIFICATE-----[\s\S]*?-----END CERTIFICATE-----/g;

function junk(bytes: number): string {
  return `${BEGIN}\n`.repeat(Math.ceil(bytes / (BEGIN.length + 1))).slice(0, bytes);
}

function time(runs: number, fn: () => string): { medianMs: number; outcome: string } {
  const samples: number[] = [];
  let outcome = '';
  for (let i = 0; i < runs; i++) {
    const t = performance.now();
    outcome = fn();
    samples.push(performance.now() - t);
  }
  samples.sort((a, b) => a - b);
  return { medianMs: samples[Math.floor(samples.length / 2)] ?? 0, outcome };
}

/** Runs every reader; `say` prints progress. */
export async function runPemParse(say: (line: string) => void): Promise<PemFigures> {
  const runs = envNumber('BENCH_PEM_RUNS', 15);
  say(`== PEM parsing of hostile text: median of ${runs} runs each ==`);
  const mb = junk(1 << 20);
  const field = junk(PEM_FIELD_MAX_BYTES);
  const ca = await createCertificateAuthority({ commonName: 'bench-pem' });
  const bundle = ca.certPem.repeat(Math.floor((1 << 20) / ca.certPem.length) - 1);
  const headers = (lines: number): string => `${BEGIN}\na: b\n${' a: b\n'.repeat(lines)}!`;
  const timings: PemTiming[] = [];
  const add = (what: string, text: string, fn: (text: string) => string, n = runs): void => {
    const r = time(n, () => fn(text));
    timings.push({ what, bytes: text.length, ...r });
    say(`${what}: ${r.medianMs.toFixed(2)} ms (${text.length} bytes; ${r.outcome})`);
  };
  add(
    'baseline: a plain scan of the same bytes (indexOf, absent)',
    mb,
    (t) => `found at ${t.indexOf('\u0000')}`,
  );
  add('baseline: a plain scan of the same bytes (a charCodeAt loop)', mb, (t) => {
    let lines = 0;
    for (let i = 0; i < t.length; i++) if (t.charCodeAt(i) === 10) lines++;
    return `${lines} lines`;
  });
  add('findPemBlocks (the scanner alone)', mb, (t) => {
    const f = findPemBlocks(t, 'CERTIFICATE');
    return `${f.blocks.length} blocks, outside text ${f.outside}`;
  });
  add('scanPemStrict (the scanner alone)', mb, (t) => {
    const s = scanPemStrict(t);
    return s.ok ? `${s.blocks.length} blocks` : s.problem;
  });
  // The answer is kept per text: a new text each run, so each run validates.
  let flip = false;
  const validate = (t: string): string => {
    flip = !flip;
    return validateClusterTrustBundle({ spec: { trustBundle: flip ? `${t}\n` : t } }) ?? 'valid';
  };
  add('validateClusterTrustBundle (KCP trust bundle, limit 1 MiB; 1 MB of junk)', junk(1_000_000), validate);
  const cut = `${ca.certPem}${BEGIN}\n${'A'.repeat((1 << 20) - ca.certPem.length - 100)}`;
  add(
    'validateClusterTrustBundle (a certificate, then a BEGIN line and 1 MB of base64, no END)',
    cut,
    validate,
  );
  add('parseCertificates (a runtime Secret field: over 256 KiB, not read)', mb, (t) =>
    parseCertificates(t).garbage ? 'garbage' : 'clean',
  );
  add('baseline: a plain scan of 256 KiB', field, (t) => `found at ${t.indexOf('\u0000')}`);
  add('parseCertificates (256 KiB of junk, the most it reads)', field, (t) =>
    parseCertificates(t).garbage ? 'garbage' : 'clean',
  );
  add('parseCas (drift listener, 256 KiB of junk)', field, (t) => {
    try {
      return `${parseCas([t]).length} CAs`;
    } catch (e) {
      return e instanceof Error ? e.message : String(e);
    }
  });
  add('certificateFromPem (1 MB of junk)', mb, (t) => {
    try {
      certificateFromPem(t);
      return 'parsed';
    } catch {
      return 'refused';
    }
  });
  add('validateClusterTrustBundle (a valid 1 MB bundle, one certificate repeated)', bundle, validate, 5);
  for (const kb of [64, 128, 256]) {
    add(
      `replaced: the lazy pattern, twice as parseCertificates ran it (${kb} KiB of junk)`,
      junk(kb << 10),
      (t) => `${(t.match(LAZY) ?? []).length} blocks, rest ${t.replace(LAZY, '').length} bytes`,
      3,
    );
  }
  for (const lines of [16, 20]) {
    add(
      `replaced: @peculiar/x509's PEM reader on ${lines} header-like lines`,
      headers(lines),
      (t) => {
        try {
          new x509.X509Certificate(t);
          return 'parsed';
        } catch {
          return 'refused';
        }
      },
      3,
    );
    add(`certificateFromPem on the same ${lines} lines`, headers(lines), (t) => {
      try {
        certificateFromPem(t);
        return 'parsed';
      } catch {
        return 'refused';
      }
    });
  }
  return { runs, timings };
}

/** The summary lines of a run. */
export function pemParseSummary(f: PemFigures): string[] {
  return [
    `pem-parse (median of ${f.runs}):`,
    ...f.timings.map((t) => `  ${t.what}: ${t.medianMs.toFixed(2)} ms on ${t.bytes} bytes (${t.outcome})`),
  ];
}

if (isMain(import.meta.url)) {
  const figures = await runPemParse(print);
  print('');
  for (const line of pemParseSummary(figures)) print(line);
}
