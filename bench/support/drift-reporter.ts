import { postJson } from '../../src/drift/post-json.js';
import { encodeWatchEvent, WATCH_EVENT_PATH } from '../../src/drift/watch-event.js';
import { RuntimeAgents, type RuntimeIdentities } from './runtime-identities.js';

/**
 * Drift reports as runtimes send them: a WatchEvent POSTed over mutual TLS to the controller's
 * listener with the runtime's client identity. One keep-alive agent per runtime, as a webhook
 * Pod's forwarder keeps one.
 */
export class DriftReporter {
  private readonly url: URL;
  private readonly agents: RuntimeAgents;

  constructor(identities: RuntimeIdentities, listenerPort: number) {
    this.url = new URL(`https://127.0.0.1:${listenerPort}${WATCH_EVENT_PATH}`);
    this.agents = new RuntimeAgents(identities, true);
  }

  /** Reports a change of the pull Secret on `runtimeId`; resolves with the listener's HTTP status. */
  async report(runtimeId: string): Promise<number> {
    const body = encodeWatchEvent({
      watched: { Namespace: 'kyma-system', Name: 'registry-credentials' },
      watchedGvk: { group: '', version: 'v1', kind: 'Secret' },
    });
    const answer = await postJson(this.url, this.agents.of(runtimeId), body, 10_000).answer;
    return answer.status;
  }

  close(): void {
    this.agents.close();
  }
}
