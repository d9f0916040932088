import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { LeaderCallbacks } from '../../../src/kube/leader-election.js';
import { part, PartGroup } from '../../../src/process/part-group.js';
import { RuntimeAgent, type Elector, type LeaderPart } from '../../../src/runtime-agent/runtime-agent.js';
import { silentLogger } from '../../../src/telemetry/logger.js';

/** An election the test decides: it leads when told, as the LeaderElector calls back. */
class TestElector implements Elector {
  private callbacks: LeaderCallbacks | undefined;
  private term: { abort: AbortController; work: Promise<void> } | undefined;

  start(callbacks: LeaderCallbacks): void {
    this.callbacks = callbacks;
  }

  isLeader(): boolean {
    return this.term !== undefined;
  }

  lead(): void {
    const abort = new AbortController();
    const cb = this.callbacks;
    assert.ok(cb, 'the agent stood for election');
    const term = { abort, work: Promise.resolve() };
    this.term = term;
    term.work = Promise.resolve(cb.onStartedLeading(abort.signal));
  }

  async lose(): Promise<void> {
    const term = this.term;
    this.term = undefined;
    term?.abort.abort();
    await term?.work;
    await this.callbacks?.onStoppedLeading();
  }

  async stop(): Promise<void> {
    await this.lose();
  }
}

const settle = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

/** Parts that record their starts and stops in `log`, each named after its term. */
function recorded(log: string[], names: readonly string[]): LeaderPart[] {
  let term = 0;
  return names.map((name, i) => (leadership) => {
    if (i === 0) term++;
    const label = `${name}#${term}`;
    return part(name, {
      start: () => {
        assert.equal(leadership.isLeader(), true, `${label} starts only while leading`);
        log.push(`start ${label}`);
      },
      stop: () => {
        log.push(`stop ${label}`);
      },
    });
  });
}

function agentWith(parts: readonly LeaderPart[], elector: TestElector, restartDelayMs = 5_000): RuntimeAgent {
  return new RuntimeAgent({
    access: { kubeConfig: undefined } as never,
    election: { namespace: 'kyma-system', leaseName: 'unused', identity: 'test' },
    parts,
    logger: silentLogger(),
    elector,
    restartDelayMs,
  });
}

describe('the runtime agent', () => {
  test('its parts run only while it leads: started in order, stopped in reverse, built afresh each term', async () => {
    const log: string[] = [];
    const elector = new TestElector();
    const agent = agentWith(recorded(log, ['sweeper', 'restarter', 'attestor']), elector);
    agent.start();
    await settle();
    assert.deepEqual(log, [], 'nothing runs on a replica that does not lead');
    assert.equal(agent.isLeader(), false);

    elector.lead();
    await settle();
    assert.deepEqual(log, ['start sweeper#1', 'start restarter#1', 'start attestor#1']);
    assert.equal(agent.isLeader(), true);

    await elector.lose();
    assert.deepEqual(log.slice(3), ['stop attestor#1', 'stop restarter#1', 'stop sweeper#1']);

    elector.lead();
    await settle();
    assert.deepEqual(log.slice(6), ['start sweeper#2', 'start restarter#2', 'start attestor#2']);
    await agent.stop();
    assert.deepEqual(log.slice(9), ['stop attestor#2', 'stop restarter#2', 'stop sweeper#2']);
    assert.equal(agent.termsLed(), 2);
  });

  test('in the process group it starts after the server it needs and stops before it', async () => {
    const log: string[] = [];
    const elector = new TestElector();
    const server = part('server', {
      start: () => {
        log.push('start server');
      },
      stop: () => {
        log.push('stop server');
      },
    });
    const agent = new RuntimeAgent({
      access: { kubeConfig: undefined } as never,
      election: { namespace: 'kyma-system', leaseName: 'unused', identity: 'test' },
      parts: recorded(log, ['follower']),
      logger: silentLogger(),
      elector,
      needs: [server],
    });
    // Added first, started second: the order comes from the needs.
    const group = new PartGroup('webhook', silentLogger());
    group.add(agent);
    group.add(server);
    await group.start();
    elector.lead();
    await settle();
    await group.stop();
    assert.deepEqual(log, ['start server', 'start follower#1', 'stop follower#1', 'stop server']);
    assert.equal(group.running(), false);
  });

  test('parts that fail to start are stopped and tried again while the term lasts', async () => {
    const log: string[] = [];
    let attempts = 0;
    const flaky: LeaderPart = () =>
      part('preflight', {
        start: () => {
          attempts++;
          if (attempts === 1) throw new Error('not yet');
          log.push('start preflight');
        },
        stop: () => {
          log.push('stop preflight');
        },
      });
    const elector = new TestElector();
    const agent = agentWith([...recorded(log, ['sweeper']), flaky], elector, 10);
    agent.start();
    elector.lead();
    for (let i = 0; i < 100 && !log.includes('start preflight'); i++)
      await new Promise((resolve) => setTimeout(resolve, 10));
    assert.deepEqual(log, ['start sweeper#1', 'stop sweeper#1', 'start sweeper#1', 'start preflight']);
    await agent.stop();
    assert.deepEqual(log.slice(4), ['stop preflight', 'stop sweeper#1']);
  });
});
