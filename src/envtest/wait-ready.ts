import { request as httpRequest } from 'node:http';
import { request as httpsRequest } from 'node:https';
import type { ManagedProcess } from './managed-process.js';
import { ControlPlaneError } from './errors.js';

/** TLS material for probing an HTTPS endpoint. */
export interface ProbeTls {
  ca: string;
  cert?: string;
  key?: string;
}

/** One GET; resolves with the status code, or undefined when the endpoint does not answer. */
export function probe(url: string, tls?: ProbeTls, timeoutMs = 2000): Promise<number | undefined> {
  return new Promise((resolve) => {
    const u = new URL(url);
    const options = { method: 'GET', timeout: timeoutMs, ...tls };
    const req = (u.protocol === 'https:' ? httpsRequest : httpRequest)(u, options, (res) => {
      res.resume();
      res.on('end', () => {
        resolve(res.statusCode);
      });
    });
    req.on('timeout', () => req.destroy());
    req.on('error', () => {
      resolve(undefined);
    });
    req.end();
  });
}

/** Polls `url` until it answers 200, failing early (with the log tail) if the process exits. */
export async function waitReady(
  process: ManagedProcess,
  url: string,
  tls: ProbeTls | undefined,
  timeoutMs: number,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let delay = 50;
  while (Date.now() < deadline) {
    if (!process.running) {
      throw new ControlPlaneError(`${process.name} exited while starting; log tail:\n${process.logTail()}`);
    }
    if ((await probe(url, tls)) === 200) return;
    await new Promise((r) => setTimeout(r, delay));
    delay = Math.min(delay * 2, 500);
  }
  throw new ControlPlaneError(
    `${process.name} was not ready at ${url} within ${timeoutMs} ms; log tail:\n${process.logTail()}`,
  );
}
