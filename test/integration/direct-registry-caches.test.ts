/**
 * Customers' registry caches through direct mode, on real API servers (docs/registry-caches.md):
 * the KCP installs two runtimes. One serves RegistryCacheConfig (test/support/registry-cache-crd.ts)
 * and holds a ready cache for replace.me, the host the seed's overrides rewrite, and one for a host
 * they leave alone; the other does not serve the API. No kubelet runs the webhook's Pods: each
 * runtime's webhook runs in this process as its ServiceAccount, under the RBAC direct mode
 * installed, and writes its report into the runtime's status ConfigMap. Direct mode reads it from
 * there into condition RegistryCache of each RuntimeBootstrapper, and `rtb status` lists it.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { CACHE_API_NOT_SERVED, type RegistryCachesReport } from '../../src/api/registry-caches.js';
import { runStatus } from '../../src/cli/commands/status-action.js';
import { REGISTRY_CACHE_CONDITION } from '../../src/controller/direct/registry-cache-status.js';
import type { FleetStatus } from '../../src/controller/rollout/fleet-status.js';
import { ensureCrds } from '../../src/kube/crd.js';
import { useControlPlane } from '../support/control-plane.js';
import { conditionOf, DirectFleet } from '../support/direct-fleet.js';
import { asWebhookServiceAccount, coreOf } from '../support/kcp.js';
import {
  createRegistryCache,
  registryCacheCrd,
  registryCachesReported,
  STATUS_CONFIG_MAP,
} from '../support/registry-cache-crd.js';
import { startTestWebhook } from '../support/webhook.js';

const CACHED = 'rt-caches';
const PLAIN = 'rt-plain';
const plane = useControlPlane({ clusters: ['kcp', CACHED, PLAIN] });
const rt = (id: string) => plane().cluster(id);
const fleet = new DirectFleet(() => plane().cluster('kcp'));
const NS = 'team';

/** The fleet as `rtb status` renders it from the KCP. */
const rtbStatus = (output: 'text' | 'json'): Promise<string> =>
  runStatus(
    { namespace: 'kcp-system', rolloutPolicy: 'default', output },
    plane().cluster('kcp').kubeConfig(),
  );

/** The section of `rtb status` text on registry caches: its heading, then one line per runtime. */
const CACHES_SECTION = "Customers' registry caches on hosts the overrides rewrite (docs/registry-caches.md):";

describe('direct mode: customers’ registry caches on the RuntimeBootstrappers and in rtb status', () => {
  // What each runtime's webhook reported before the KCP first looked at it Ready.
  const reports = new Map<string, RegistryCachesReport>();

  before(async () => {
    const admin = rt(CACHED).kubeConfig();
    await ensureCrds(admin, [registryCacheCrd()]);
    await coreOf(rt(CACHED)).createNamespace({ body: { metadata: { name: NS } } });
    await createRegistryCache(admin, NS, 'replace-me', 'replace.me', 'Ready');
    await createRegistryCache(admin, NS, 'quay', 'quay.io', 'Ready');

    await fleet.prepare({ [CACHED]: rt(CACHED), [PLAIN]: rt(PLAIN) });
    await fleet.start({ runtimeTimeoutMs: 3_000 });
    for (const id of [CACHED, PLAIN]) {
      await fleet.create(id);
      // Installed (config, ServiceAccount, RBAC), waiting for its Deployment: the webhook's turn.
      await fleet.waitState(id, 'Installing');
      const hook = await startTestWebhook(rt(id), {
        kubeConfig: await asWebhookServiceAccount(rt(id)),
        statusConfigMap: STATUS_CONFIG_MAP,
        trustCapability: false,
        escapedPods: false,
        registryCaches: { intervalMs: 300 },
        runtimeAgent: { leaseTiming: { leaseDurationMs: 2_000, renewDeadlineMs: 1_500, retryPeriodMs: 250 } },
      });
      fleet.onStop(() => hook.stop());
      // The KCP reads the report on its first pass that finds the runtime Ready: it is there by then.
      reports.set(id, await registryCachesReported(rt(id).kubeConfig(), () => true, `${id}: the report`));
      await fleet.waitReady(id, rt(id));
    }
  });
  after(() => fleet.stop());

  test('a runtime with the CRD and a ready cache for a rewritten host: the CR’s condition names the host, rtb status prints it', async () => {
    const r = reports.get(CACHED);
    assert.deepEqual(
      { api: r?.api, hosts: r?.hosts, rewritten: r?.rewritten, mode: r?.mode, more: r?.more },
      {
        api: 'core.kyma-project.io/v1beta1',
        hosts: ['quay.io', 'replace.me'],
        rewritten: ['replace.me'],
        mode: 'rewrite',
        more: 0,
      },
    );

    const rb = await fleet.waitCondition(CACHED, REGISTRY_CACHE_CONDITION, { status: 'True' });
    const c = conditionOf(rb, REGISTRY_CACHE_CONDITION);
    assert.equal(c?.reason, 'Bypassed');
    assert.match(
      c.message,
      /^replace\.me: a customer's registry cache on this runtime serves them, but the overrides rewrite/,
    );
    assert.doesNotMatch(c.message, /quay\.io/, 'a cached host the overrides leave alone is not named');
    assert.equal(rb.status?.state, 'Ready');

    const text = await rtbStatus('text');
    const lines = text.split('\n');
    const at = lines.indexOf(CACHES_SECTION);
    assert.ok(at >= 0, text);
    assert.equal(lines[at + 1], `  ${CACHED}  Bypassed  ${c.message}`, text);
    const json = JSON.parse(await rtbStatus('json')) as FleetStatus;
    assert.deepEqual(json.registryCaches, [{ runtime: CACHED, reason: 'Bypassed', message: c.message }]);
  });

  test('a runtime that does not serve the API: the report says so, the condition is NoCaches, rtb status lists nothing for it', async () => {
    const r = reports.get(PLAIN);
    assert.deepEqual(
      { api: r?.api, hosts: r?.hosts, rewritten: r?.rewritten, mode: r?.mode, more: r?.more },
      { api: CACHE_API_NOT_SERVED, hosts: [], rewritten: [], mode: 'rewrite', more: 0 },
    );

    const rb = await fleet.waitCondition(PLAIN, REGISTRY_CACHE_CONDITION, { status: 'False' });
    const c = conditionOf(rb, REGISTRY_CACHE_CONDITION);
    assert.equal(c?.reason, 'NoCaches');
    assert.match(c.message, new RegExp(`\\(RegistryCacheConfig: ${CACHE_API_NOT_SERVED}\\)$`));
    assert.equal(rb.status?.state, 'Ready');

    const text = await rtbStatus('text');
    assert.doesNotMatch(text, new RegExp(`^ {2}${PLAIN} .*(NoCaches|registry cache)`, 'm'), text);
    const json = JSON.parse(await rtbStatus('json')) as FleetStatus;
    assert.deepEqual(
      json.registryCaches.map((x) => x.runtime),
      [CACHED],
    );
  });
});
