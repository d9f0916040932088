import assert from 'node:assert/strict';
import { test } from 'node:test';
import { parseWebhookConfig } from '../../../src/api/webhook-config.js';
import { mutatePod } from '../../../src/mutation/pipeline.js';
import { MAX_CONTAINERS, PodTooLargeError, assertMutableSize } from '../../../src/mutation/pod-size.js';
import { seedConfigText, seedPodBefore } from '../../support/fixtures.js';

const containers = (n: number): { name: string; image: string }[] =>
  Array.from({ length: n }, (_, i) => ({ name: `c${i}`, image: 'replace.me/x' }));

test('the container lists together count against the limit; malformed ones count nothing', () => {
  const third = Math.floor(MAX_CONTAINERS / 3);
  const rest = MAX_CONTAINERS - 2 * third;
  const at = {
    spec: {
      containers: containers(third),
      initContainers: containers(third),
      ephemeralContainers: containers(rest),
    },
  };
  assert.doesNotThrow(() => {
    assertMutableSize(at);
  });
  const over = { spec: { ...at.spec, containers: containers(third + 1) } };
  assert.throws(() => {
    assertMutableSize(over);
  }, PodTooLargeError);
  // Logs print the error as `name: message`.
  assert.throws(
    () => {
      assertMutableSize(over);
    },
    {
      name: 'PodTooLargeError',
      message: `the Pod has ${MAX_CONTAINERS + 1} containers, more than the ${MAX_CONTAINERS} the webhook mutates`,
    },
  );
  for (const odd of [{}, { spec: null }, { spec: 'x' }, { spec: { containers: { length: 1e9 } } }])
    assert.doesNotThrow(() => {
      assertMutableSize(odd);
    });
});

test('mutatePod refuses a Pod over the limit before doing any work', () => {
  const pod = { ...seedPodBefore(), spec: { containers: containers(MAX_CONTAINERS + 1) } };
  assert.throws(
    () =>
      mutatePod({
        pod,
        operation: 'CREATE',
        namespace: { name: 'default' },
        config: parseWebhookConfig(JSON.parse(seedConfigText())),
        pullSecretAvailable: true,
      }),
    /1001 containers, more than the 1000 the webhook mutates/,
  );
});
