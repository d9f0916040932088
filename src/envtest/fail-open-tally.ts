/**
 * The API servers' own count of admission webhook calls that failed open
 * (`apiserver_admission_webhook_fail_open_count`), gathered per test file: each control plane
 * appends its clusters' counts to the file `$RTB_FAIL_OPEN_TALLY` names when it stops, and the
 * test runner sums them per file. A Pod admitted by a call that failed open is stored unmutated,
 * so a test that does not stop the webhook on purpose must show 0; a file that does says so with
 * {@link FAIL_OPEN_MARKER}.
 */
import { appendFile } from 'node:fs/promises';
import { request } from 'node:https';
import type { KubeConfig } from '@kubernetes/client-node';

/** The line of a test file that causes failed-open calls on purpose (and says why after it). */
export const FAIL_OPEN_MARKER = '// fail-open: on purpose';

/** The metric counted. */
export const FAIL_OPEN_METRIC = 'apiserver_admission_webhook_fail_open_count';

/** One cluster's count when its control plane stopped: a line of the tally file. */
export interface FailOpenRecord {
  readonly cluster: string;
  /** Per webhook name (the metric's `name` label). */
  readonly webhooks: Readonly<Record<string, number>>;
}

/** Failed-open calls per webhook name in an API server's `/metrics` text. */
export function parseFailOpens(metrics: string): Record<string, number> {
  const out: Record<string, number> = {};
  for (const line of metrics.split('\n')) {
    if (!line.startsWith(`${FAIL_OPEN_METRIC}{`)) continue;
    const name = /[{,]name="([^"]*)"/.exec(line)?.[1] ?? '';
    const value = Number(line.slice(line.lastIndexOf(' ') + 1));
    if (Number.isFinite(value) && value > 0) out[name] = (out[name] ?? 0) + value;
  }
  return out;
}

/** The sum of the tally file's records (JSON lines), per webhook name; a torn line is skipped. */
export function sumFailOpens(tally: string): Record<string, number> {
  const out: Record<string, number> = {};
  for (const line of tally.split('\n')) {
    if (line.trim() === '') continue;
    let record: FailOpenRecord;
    try {
      record = JSON.parse(line) as FailOpenRecord;
    } catch {
      continue;
    }
    for (const [name, n] of Object.entries(record.webhooks)) out[name] = (out[name] ?? 0) + n;
  }
  return out;
}

/** An API server's `/metrics` text, as its admin; undefined when it does not answer. */
function scrape(kubeConfig: KubeConfig, server: string): Promise<string | undefined> {
  return new Promise((resolve) => {
    const options = { method: 'GET', timeout: 5_000 };
    kubeConfig.applyToHTTPSOptions(options).then(
      () => {
        const req = request(new URL('/metrics', server), options, (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (c: Buffer) => chunks.push(c));
          res.on('end', () => {
            resolve(res.statusCode === 200 ? Buffer.concat(chunks).toString() : undefined);
          });
          res.on('error', () => {
            resolve(undefined);
          });
        });
        req.on('timeout', () => req.destroy());
        req.on('error', () => {
          resolve(undefined);
        });
        req.end();
      },
      () => {
        resolve(undefined);
      },
    );
  });
}

/** A cluster as the tally reads it. */
export interface TalliedCluster {
  readonly name: string;
  readonly server: string;
  readonly running: boolean;
  kubeConfig(): KubeConfig;
}

/**
 * Appends each running cluster's failed-open calls to `$RTB_FAIL_OPEN_TALLY` (nothing without it,
 * nothing for a cluster with none). Never throws: the tally must not fail a stop.
 */
export async function recordFailOpens(
  clusters: readonly TalliedCluster[],
  env: NodeJS.ProcessEnv = process.env,
): Promise<void> {
  const file = env.RTB_FAIL_OPEN_TALLY;
  if (!file) return;
  const records = await Promise.all(
    clusters
      .filter((c) => c.running)
      .map(async (c): Promise<FailOpenRecord> => {
        const text = await scrape(c.kubeConfig(), c.server);
        return { cluster: c.name, webhooks: text === undefined ? {} : parseFailOpens(text) };
      }),
  );
  const lines = records
    .filter((r) => Object.keys(r.webhooks).length > 0)
    .map((r) => `${JSON.stringify(r)}\n`)
    .join('');
  if (lines === '') return;
  try {
    await appendFile(file, lines);
  } catch {
    // Only the run's summary misses it.
  }
}
