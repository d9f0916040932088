// A runtime's drift client gone hostile, in its own process so that its CPU is not the
// benchmark's: POSTs drift reports and attestations (out of sync, or an old one replayed) to the
// KCP's drift listener with the runtime's client identity, `concurrency` at a time, without
// pause. Counts the answers by path and status into `countsFile` every second.
//
//   node drift-spam-child.js <config.json>    (see DriftSpamConfig)
import { writeFileSync } from 'node:fs';
import https from 'node:https';
import { postJson } from '../../src/drift/post-json.js';
import { childConfig, runChild } from './child-main.js';

/** What the parent asks for. */
export interface DriftSpamConfig {
  /** The listener, `https://127.0.0.1:<port>`. */
  readonly listenerUrl: string;
  readonly caPem: string;
  readonly certPem: string;
  readonly keyPem: string;
  /** Sent in turn. */
  readonly requests: readonly { readonly label: string; readonly path: string; readonly body: string }[];
  readonly concurrency: number;
  readonly countsFile: string;
}

/** What `countsFile` holds: answers by `label status` (`label error` for no answer). */
export type DriftSpamCounts = Record<string, number>;

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

async function main(): Promise<void> {
  const c = childConfig('drift-spam-child.js') as DriftSpamConfig;
  const agent = new https.Agent({
    keepAlive: true,
    maxSockets: c.concurrency,
    ca: c.caPem,
    cert: c.certPem,
    key: c.keyPem,
  });
  const counts: DriftSpamCounts = {};
  const bump = (key: string): void => {
    counts[key] = (counts[key] ?? 0) + 1;
  };
  const flush = (): void => {
    writeFileSync(c.countsFile, JSON.stringify(counts));
  };
  setInterval(flush, 1_000).unref();
  // Never outlive the benchmark.
  const parent = process.ppid;
  setInterval(() => {
    if (process.ppid !== parent) process.exit(0);
  }, 1_000).unref();
  process.once('SIGTERM', () => {
    flush();
    process.exit(0);
  });
  let next = 0;
  const worker = async (): Promise<never> => {
    for (;;) {
      const r = c.requests[next++ % c.requests.length];
      if (r === undefined) throw new Error('no requests to send');
      try {
        // The attestation's answer is read to its end (keep-alive), up to 256 KiB.
        const answer = await postJson(new URL(r.path, c.listenerUrl), agent, r.body, 10_000, 256 * 1024)
          .answer;
        bump(`${r.label} ${answer.status}`);
      } catch {
        bump(`${r.label} error`);
        await sleep(100);
      }
    }
  };
  await Promise.all(Array.from({ length: c.concurrency }, worker));
}

runChild('drift spam child failed', main);
