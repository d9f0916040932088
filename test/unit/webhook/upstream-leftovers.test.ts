import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, test } from 'node:test';
import { parseAllDocuments } from 'yaml';
import * as names from '../../../src/api/runtime-names.js';
import { renderWebhookManifests } from '../../../src/render/webhook-manifests.js';
import { networkPolicyList } from '../../../src/render/webhook-network-policies.js';
import {
  UPSTREAM_ANNOTATIONS,
  UPSTREAM_KEPT,
  UPSTREAM_LEFTOVERS,
  type FoundObject,
  type UpstreamLeftover,
} from '../../../src/api/upstream-leftovers.js';

type Obj = Record<string, unknown> & {
  kind: string;
  metadata: { name: string; namespace?: string; labels?: Record<string, string> };
};

const UPSTREAM = parseAllDocuments(
  readFileSync(new URL('../../fixtures/upstream/install.yaml', import.meta.url), 'utf8'),
)
  .map((d) => d.toJS() as Obj | null)
  .filter((o): o is Obj => o !== null);

/** The ServiceMonitor of upstream's (commented-out) prometheus/ directory, as kubebuilder scaffolds it. */
const SERVICE_MONITOR: Obj = {
  apiVersion: 'monitoring.coreos.com/v1',
  kind: 'ServiceMonitor',
  metadata: { name: 'rt-bootstrapper-controller-manager-metrics-monitor', namespace: 'kyma-system' },
  spec: {
    endpoints: [{ path: '/metrics', port: 'https' }],
    selector: {
      matchLabels: { 'control-plane': 'controller-manager', 'app.kubernetes.io/name': 'rt-bootstrapper' },
    },
  },
};

const upstreamObjectOf = (l: UpstreamLeftover): Obj => {
  const found =
    l.kind === 'ServiceMonitor'
      ? SERVICE_MONITOR
      : UPSTREAM.find(
          (o) => o.kind === l.kind && o.metadata.name === l.name && o.metadata.namespace === l.namespace,
        );
  assert.ok(found, `the fixture has ${l.kind} ${l.namespace ?? ''}/${l.name}`);
  return found;
};
const withLabels = (o: Obj, labels: Record<string, string> | undefined): Obj => ({
  ...o,
  metadata: { ...o.metadata, ...(labels === undefined ? { labels: {} } : { labels }) },
});
const leftover = (kind: string, nameEnd: string): UpstreamLeftover => {
  const l = UPSTREAM_LEFTOVERS.find((x) => x.kind === kind && x.name.endsWith(nameEnd));
  assert.ok(l, `${kind} …${nameEnd} is listed`);
  return l;
};

describe('the upstream leftover list', () => {
  test("each listed object is recognised in upstream's rendering", () => {
    for (const l of UPSTREAM_LEFTOVERS) assert.equal(l.isUpstreams(upstreamObjectOf(l)), true, l.name);
  });

  test('ours are never taken for upstream’s, whatever their content', () => {
    for (const l of UPSTREAM_LEFTOVERS) {
      const o = upstreamObjectOf(l);
      const ours = withLabels(o, { ...o.metadata.labels, 'app.kubernetes.io/managed-by': 'rt-bootstrapper' });
      assert.equal(l.isUpstreams(ours), false, l.name);
    }
  });

  test('an object of the same name with other content stays', () => {
    const variants: [UpstreamLeftover, FoundObject][] = [];
    const metrics = leftover('Service', '-metrics-service');
    const svc = upstreamObjectOf(metrics);
    variants.push([metrics, { ...svc, spec: { selector: { app: 'mine' } } }]);
    variants.push([metrics, { ...svc, spec: { selector: { ...names.WEBHOOK_SELECTOR, extra: 'x' } } }]);
    const monitor = leftover('ServiceMonitor', '-metrics-monitor');
    variants.push([monitor, { ...SERVICE_MONITOR, spec: { selector: { matchLabels: { app: 'mine' } } } }]);
    const authBinding = leftover('ClusterRoleBinding', '-metrics-auth-rolebinding');
    const crb = upstreamObjectOf(authBinding);
    variants.push([authBinding, { ...crb, roleRef: { kind: 'ClusterRole', name: 'view' } }]);
    variants.push([authBinding, { ...crb, subjects: [{ kind: 'User', name: 'someone' }] }]);
    const authRole = leftover('ClusterRole', '-metrics-auth-role');
    const cr = upstreamObjectOf(authRole);
    variants.push([
      authRole,
      { ...cr, rules: [...(cr.rules as unknown[]), { resources: ['secrets'], verbs: ['get'] }] },
    ]);
    variants.push([authRole, { ...cr, rules: [] }]);
    const restarterRole = leftover('ClusterRole', '-pod-restarter-role');
    variants.push([restarterRole, withLabels(upstreamObjectOf(restarterRole), undefined)]);
    for (const l of UPSTREAM_LEFTOVERS.filter((x) => x.kind === 'RoleBinding')) {
      const rb = upstreamObjectOf(l);
      variants.push([l, withLabels(rb, undefined)]);
      variants.push([l, { ...rb, roleRef: { kind: 'ClusterRole', name: 'edit' } }]);
    }
    for (const [l, o] of variants) assert.equal(l.isUpstreams(o), false, `${l.name}: ${JSON.stringify(o)}`);
  });

  test('none of our own names is listed, and nothing kept is removed', () => {
    const ours = new Set<string>(
      Object.values(names as Record<string, unknown>).filter((v): v is string => typeof v === 'string'),
    );
    // Upstream's pod-restarter names are kept in runtime-names.ts for a later release of ours; the
    // guard (our managed-by label) keeps such objects, which the cleanup's integration test checks.
    ours.delete(names.POD_RESTARTER_CLUSTER_ROLE);
    ours.delete(names.POD_RESTARTER_ROLE_BINDING);
    for (const l of UPSTREAM_LEFTOVERS) assert.ok(!ours.has(l.name), `${l.name} is one of ours`);
    const keptNames = UPSTREAM_KEPT.flatMap((k) => k.names);
    for (const l of UPSTREAM_LEFTOVERS) assert.ok(!keptNames.includes(l.name), `${l.name} is kept`);
    for (const k of UPSTREAM_KEPT) assert.ok(k.why.length > 20, `${k.kind}: why it stays`);
  });

  test('every entry says why; bindings go before their roles', () => {
    for (const l of UPSTREAM_LEFTOVERS) assert.ok(l.reason.length > 20, `${l.name}: reason`);
    const index = (kind: string, nameEnd: string): number =>
      UPSTREAM_LEFTOVERS.findIndex((l) => l.kind === kind && l.name.endsWith(nameEnd));
    assert.ok(
      index('ClusterRoleBinding', 'metrics-auth-rolebinding') < index('ClusterRole', 'metrics-auth-role'),
      'auth',
    );
    for (const l of UPSTREAM_LEFTOVERS.filter((x) => x.kind === 'RoleBinding'))
      assert.ok(
        UPSTREAM_LEFTOVERS.indexOf(l) < index('ClusterRole', 'pod-restarter-role'),
        l.namespace ?? '',
      );
  });

  test("the fixture's upstream objects the list leaves alone are ours or explicitly kept", () => {
    const listed = new Set(UPSTREAM_LEFTOVERS.map((l) => `${l.kind}/${l.name}`));
    const ours = new Set<string>(
      Object.values(names as Record<string, unknown>).filter((v): v is string => typeof v === 'string'),
    );
    const keptNames = UPSTREAM_KEPT.flatMap((k) => k.names);
    for (const o of UPSTREAM) {
      if (listed.has(`${o.kind}/${o.metadata.name}`)) continue;
      const isOurs = ours.has(o.metadata.name) || o.metadata.name === 'rt-bootstrapper-config';
      assert.ok(
        isOurs || keptNames.includes(o.metadata.name),
        `${o.kind} ${o.metadata.name} is accounted for`,
      );
    }
  });

  test("upstream's NetworkPolicies are ours (rendered under their names), none is removed", () => {
    const policies = UPSTREAM.filter((o) => o.kind === 'NetworkPolicy').map((o) => o.metadata.name);
    assert.equal(policies.length, 3);
    const rendered = networkPolicyList(renderWebhookManifests({ image: 'x' }).networkPolicies).map(
      (p) => p.metadata?.name,
    );
    for (const name of policies) {
      assert.ok(rendered.includes(name), `${name} is rendered`);
      assert.ok(!UPSTREAM_LEFTOVERS.some((l) => l.name === name), `${name} is not removed`);
      assert.ok(!UPSTREAM_KEPT.some((k) => k.names.includes(name)), `${name} is not merely kept`);
    }
    assert.ok(!UPSTREAM_LEFTOVERS.some((l) => l.kind === 'NetworkPolicy'));
  });

  test('the annotations removed are on our own objects', () => {
    for (const a of UPSTREAM_ANNOTATIONS) {
      assert.equal(a.resource, 'mutatingwebhookconfigurations');
      assert.equal(a.name, names.MUTATING_WEBHOOK_CONFIGURATION);
    }
  });
});
