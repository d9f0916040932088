import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { freePort } from './free-port.js';
import { ManagedProcess } from './managed-process.js';
import { waitReady } from './wait-ready.js';

/** A running etcd on loopback (plain HTTP: it is reachable only from this machine). */
export interface EtcdServer {
  readonly url: string;
  readonly process: ManagedProcess;
  stop(): Promise<void>;
}

/** Starts one single-member etcd with its data in `dir`, tuned for tests (no fsync). */
export async function startEtcd(binary: string, dir: string, timeoutMs = 30_000): Promise<EtcdServer> {
  const dataDir = join(dir, 'data');
  await mkdir(dataDir, { recursive: true });
  let lastError: unknown;
  for (let attempt = 0; attempt < 3; attempt++) {
    const [clientPort, peerPort] = [await freePort(), await freePort()];
    const url = `http://127.0.0.1:${clientPort}`;
    const peer = `http://127.0.0.1:${peerPort}`;
    const proc = new ManagedProcess(
      'etcd',
      binary,
      [
        '--name=default',
        `--data-dir=${dataDir}`,
        `--listen-client-urls=${url}`,
        `--advertise-client-urls=${url}`,
        `--listen-peer-urls=${peer}`,
        `--initial-advertise-peer-urls=${peer}`,
        `--initial-cluster=default=${peer}`,
        '--unsafe-no-fsync=true',
        '--quota-backend-bytes=4294967296',
        '--log-level=warn',
      ],
      join(dir, 'etcd.log'),
    );
    proc.start();
    try {
      await waitReady(proc, `${url}/health`, undefined, timeoutMs);
      return { url, process: proc, stop: () => proc.stop(5_000) };
    } catch (error) {
      // A lost race for the port shows up as an early exit; try other ports.
      lastError = error;
      await proc.stop(1_000);
    }
  }
  throw lastError;
}
