/**
 * Debian's Prometheus (the `prometheus` package: `prometheus` and `promtool`) for the monitoring
 * tests: rules checked and unit-tested with promtool, and a real server scraping a landscape on
 * loopback (scripts/install-node-host.sh installs the package).
 */
import { execFile } from 'node:child_process';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { ControlPlaneError } from './errors.js';
import { freePort } from './free-port.js';
import { ManagedProcess } from './managed-process.js';
import { findTool } from './node-host.js';
import { waitReady } from './wait-ready.js';

/** What to run when the tools are missing. */
export const PROMETHEUS_HINT =
  "run scripts/install-node-host.sh (it installs Debian's prometheus package: prometheus and promtool), as root, once";

/** The two programs. */
export interface PrometheusTools {
  readonly prometheus: string;
  readonly promtool: string;
}

/** Finds `prometheus` and `promtool`; throws {@link ControlPlaneError} saying what to run when either is missing. */
export async function prometheusTools(
  find: (tool: string) => Promise<string | undefined> = (tool) => findTool(tool),
): Promise<PrometheusTools> {
  const prometheus = await find('prometheus');
  const promtool = await find('promtool');
  if (prometheus === undefined || promtool === undefined) {
    const missing = [prometheus === undefined ? 'prometheus' : '', promtool === undefined ? 'promtool' : '']
      .filter(Boolean)
      .join(' and ');
    throw new ControlPlaneError(`the monitoring tests need ${missing}: ${PROMETHEUS_HINT}`);
  }
  return { prometheus, promtool };
}

/** How a promtool run ended, with everything it printed. */
export interface PromtoolResult {
  readonly ok: boolean;
  readonly output: string;
}

/** Runs promtool with `args` in `cwd`. */
export function runPromtool(
  tools: PrometheusTools,
  args: readonly string[],
  cwd: string,
): Promise<PromtoolResult> {
  return new Promise((resolve) => {
    execFile(tools.promtool, args, { cwd, timeout: 120_000 }, (error, stdout, stderr) => {
      resolve({ ok: error === null, output: `${stdout}${stderr}` });
    });
  });
}

/** A running Prometheus on loopback. */
export interface PrometheusServer {
  readonly url: string;
  readonly process: ManagedProcess;
  /** GET `/api/v1/<path>` with `params`; resolves `data`, rejects with Prometheus's error. */
  api<T>(path: string, params: Readonly<Record<string, string | readonly string[]>>): Promise<T>;
  stop(): Promise<void>;
}

/** A Prometheus API call failed (`error` and `errorType` as Prometheus said them). */
export class PrometheusApiError extends Error {
  override readonly name = 'PrometheusApiError';
  constructor(
    message: string,
    readonly errorType: string,
  ) {
    super(message);
  }
}

/**
 * Starts Prometheus with `scrapeConfigs` (its `scrape_configs`), its data in `dir`, scraping every
 * `scrapeIntervalSeconds`; resolves once it is ready.
 */
export async function startPrometheus(o: {
  readonly tools: PrometheusTools;
  readonly dir: string;
  readonly scrapeConfigs: readonly object[];
  readonly scrapeIntervalSeconds?: number;
  readonly timeoutMs?: number;
}): Promise<PrometheusServer> {
  const interval = `${o.scrapeIntervalSeconds ?? 1}s`;
  const config = join(o.dir, 'prometheus.yml');
  await writeFile(
    config,
    stringify({
      global: { scrape_interval: interval, evaluation_interval: interval },
      scrape_configs: o.scrapeConfigs,
    }),
  );
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const proc = new ManagedProcess(
    'prometheus',
    o.tools.prometheus,
    [
      `--config.file=${config}`,
      `--storage.tsdb.path=${join(o.dir, 'data')}`,
      `--web.listen-address=127.0.0.1:${port}`,
      '--log.level=warn',
    ],
    join(o.dir, 'prometheus.log'),
  );
  proc.start();
  await waitReady(proc, `${url}/-/ready`, undefined, o.timeoutMs ?? 60_000);
  return {
    url,
    process: proc,
    async api<T>(path: string, params: Readonly<Record<string, string | readonly string[]>>): Promise<T> {
      const query = new URLSearchParams();
      for (const [k, v] of Object.entries(params))
        for (const value of typeof v === 'string' ? [v] : v) query.append(k, value);
      const res = await fetch(`${url}/api/v1/${path}?${query.toString()}`);
      const body = (await res.json()) as { status: string; data?: T; error?: string; errorType?: string };
      if (body.status !== 'success' || body.data === undefined)
        throw new PrometheusApiError(`${path}: ${body.error ?? res.statusText}`, body.errorType ?? 'unknown');
      return body.data;
    },
    stop: () => proc.stop(5_000),
  };
}
