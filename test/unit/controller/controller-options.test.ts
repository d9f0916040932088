import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { runtimeCrd } from '../../../src/api/crds.js';
import { RUNTIME_GROUP, RUNTIME_KIND, RUNTIME_PLURAL } from '../../../src/api/runtime.js';
import { FlagError, parseDuration } from '../../../src/cli/flag-values.js';

describe('rtb controller options', () => {
  test('durations in Go syntax', () => {
    assert.equal(parseDuration('500ms'), 500);
    assert.equal(parseDuration('2s'), 2000);
    assert.equal(parseDuration('1m30s'), 90_000);
    assert.equal(parseDuration('1h'), 3_600_000);
    assert.equal(parseDuration('1.5s'), 1500);
    for (const bad of ['', '2', 's', '2x', '2s ', '-1s', '1s2'])
      assert.throws(() => parseDuration(bad), FlagError, bad);
  });
});

/** The parts of a CRD read here, with the API's own names (`enum`, not client-node's `_enum`). */
interface Schema {
  type?: string;
  required?: string[];
  enum?: string[];
  properties?: Record<string, Schema>;
  'x-kubernetes-preserve-unknown-fields'?: boolean;
}
interface WireCrd {
  metadata?: { name?: string };
  spec: {
    names: { kind: string };
    scope: string;
    versions: {
      name: string;
      served: boolean;
      storage: boolean;
      subresources?: { status?: object };
      schema?: { openAPIV3Schema?: Schema };
    }[];
  };
}

describe('the shipped Runtime CRD', () => {
  test("is KIM's group, kind and scope, with spec.shoot, status.state and conditions", () => {
    const crd = runtimeCrd() as WireCrd;
    assert.equal(crd.metadata?.name, `${RUNTIME_PLURAL}.${RUNTIME_GROUP}`);
    assert.equal(crd.spec.names.kind, RUNTIME_KIND);
    assert.equal(crd.spec.scope, 'Namespaced');
    const v1 = crd.spec.versions.find((v) => v.name === 'v1')!;
    assert.ok(v1.served && v1.storage);
    assert.deepEqual(v1.subresources?.status, {});
    const schema = v1.schema!.openAPIV3Schema!;
    const shoot = schema.properties!.spec!.properties!.shoot!;
    assert.deepEqual([...shoot.required!].sort(), [
      'name',
      'networking',
      'platformRegion',
      'provider',
      'purpose',
      'region',
      'secretBindingName',
    ]);
    assert.equal(schema.properties!.spec!['x-kubernetes-preserve-unknown-fields'], true);
    assert.deepEqual(schema.properties!.status!.properties!.state!.enum, [
      'Pending',
      'Ready',
      'Terminating',
      'Failed',
    ]);
    assert.equal(schema.properties!.status!.properties!.conditions!.type, 'array');
  });
});
