// The load of the hostile-load benchmark, run as its own process, in one of two roles: the
// hostile one, `concurrency` connections that post one hostile body after another as fast as
// they are answered (a closed loop); or the valid one, AdmissionReviews at a fixed rate on a
// keep-alive Agent, as the API server sends them. Two processes, so that the hostile one, busy
// encrypting megabytes, does not delay the valid ones on the client side. Counts the answers
// and the valid ones' latencies.
//
//   node load-hostile.js <config.json>    (see HostileConfig; writes the result file)
import { readFileSync, writeFileSync } from 'node:fs';
import { Agent, request } from 'node:https';
import { summarize, type LatencySummary } from './stats.js';
import { childConfig, runChild } from './child-main.js';

/** What the parent asks for. */
export interface HostileConfig {
  readonly url: string;
  readonly caFile: string;
  /** The hostile role. */
  readonly hostile?: { readonly bodyFile: string; readonly concurrency: number };
  /** The valid role: every occurrence of `marker` is replaced by a counter of the same width in each request. */
  readonly valid?: { readonly bodyFile: string; readonly marker: string; readonly rate: number };
  readonly seconds: number;
  readonly resultFile: string;
}

/** How the requests of one kind ended. */
export interface Outcomes {
  readonly sent: number;
  /** By HTTP status, or by error code for requests that got no answer. */
  readonly answers: Readonly<Record<string, number>>;
}

/** What the valid role counts besides the answers. */
export interface ValidOutcomes extends Outcomes {
  /** Answered 200 with the request's uid and a patch (what the webhook answers the seed Pod). */
  readonly correct: number;
  /** Correct and within the API server's 5 s timeout. */
  readonly inTime: number;
  readonly latency: LatencySummary;
}

/** What the child writes: the outcomes of its role. */
export interface HostileResult {
  readonly hostile?: Outcomes;
  readonly valid?: ValidOutcomes;
}

interface Reply {
  readonly outcome: string;
  readonly body: string;
}

function post(url: string, agent: Agent, ca: Buffer, body: Buffer, keepBody: boolean): Promise<Reply> {
  return new Promise((resolve) => {
    const req = request(
      url,
      {
        method: 'POST',
        agent,
        ca,
        headers: { 'content-type': 'application/json', 'content-length': body.length },
        timeout: 30_000,
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => {
          if (keepBody) chunks.push(c);
        });
        res.on('end', () => {
          resolve({ outcome: String(res.statusCode ?? 0), body: Buffer.concat(chunks).toString('utf8') });
        });
        res.on('error', (error: NodeJS.ErrnoException) => {
          resolve({ outcome: error.code ?? error.message, body: '' });
        });
      },
    );
    req.on('timeout', () => {
      req.destroy(Object.assign(new Error('timed out'), { code: 'TIMEOUT' }));
    });
    req.on('error', (error: NodeJS.ErrnoException) => {
      resolve({ outcome: error.code ?? error.message, body: '' });
    });
    req.end(body);
  });
}

function tally(answers: Record<string, number>, outcome: string): void {
  answers[outcome] = (answers[outcome] ?? 0) + 1;
}

async function main(): Promise<void> {
  const c = childConfig('load-hostile.js') as HostileConfig;
  const ca = readFileSync(c.caFile);
  const deadline = Date.now() + c.seconds * 1000;

  const hostileAnswers: Record<string, number> = {};
  let hostileSent = 0;
  const hostileLoops: Promise<void>[] = [];
  if (c.hostile) {
    const body = readFileSync(c.hostile.bodyFile);
    const agent = new Agent({ keepAlive: true, maxSockets: c.hostile.concurrency });
    for (let i = 0; i < c.hostile.concurrency; i++) {
      hostileLoops.push(
        (async () => {
          while (Date.now() < deadline) {
            hostileSent++;
            const reply = await post(c.url, agent, ca, body, false);
            tally(hostileAnswers, reply.outcome);
            // A refused connection (the server closed its listener) is not retried at full speed.
            if (!/^\d+$/.test(reply.outcome)) await new Promise((r) => setTimeout(r, 50));
          }
        })(),
      );
    }
  }

  const valid = c.valid;
  const template = valid ? readFileSync(valid.bodyFile, 'utf8') : '';
  const width = valid?.marker.length ?? 0;
  const validAgent = new Agent({ keepAlive: true, maxSockets: 8 });
  const validAnswers: Record<string, number> = {};
  const latency: number[] = [];
  let correct = 0;
  let inTime = 0;
  let validSent = 0;
  const pending: Promise<void>[] = [];
  const started = Date.now();
  while (valid && Date.now() < deadline) {
    const n = String(validSent).padStart(width, '0');
    const body = Buffer.from(template.replaceAll(valid.marker, n));
    validSent++;
    const t0 = process.hrtime.bigint();
    pending.push(
      post(c.url, validAgent, ca, body, true).then((reply) => {
        const ms = Number(process.hrtime.bigint() - t0) / 1e6;
        tally(validAnswers, reply.outcome);
        latency.push(ms);
        if (
          reply.outcome === '200' &&
          reply.body.includes(`"uid":"${n}"`) &&
          reply.body.includes('"patch"')
        ) {
          correct++;
          if (ms < 5_000) inTime++;
        }
      }),
    );
    const next = started + (validSent * 1000) / valid.rate;
    await new Promise((r) => setTimeout(r, Math.max(0, next - Date.now())));
  }
  await Promise.all([...pending, ...hostileLoops]);
  const result: HostileResult = {
    ...(c.hostile ? { hostile: { sent: hostileSent, answers: hostileAnswers } } : {}),
    ...(c.valid
      ? { valid: { sent: validSent, answers: validAnswers, correct, inTime, latency: summarize(latency) } }
      : {}),
  };
  writeFileSync(c.resultFile, JSON.stringify(result));
}

runChild('load-hostile', main);
