import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { decideHostSetup, INSTALL_SCRIPT, type HostFacts } from '../../../scripts/host-setup.js';

const facts = (over: Partial<HostFacts>): HostFacts => ({
  missing: [],
  root: false,
  apt: true,
  sudo: () => false,
  ...over,
});

describe('the host set-up before a whole test run', () => {
  test('everything installed: nothing to do, and sudo is never asked', () => {
    let asked = false;
    const sudo = (): boolean => {
      asked = true;
      return true;
    };
    assert.deepEqual(decideHostSetup(facts({ root: false, sudo })), { kind: 'ready' });
    assert.deepEqual(decideHostSetup(facts({ root: true, apt: false, sudo })), { kind: 'ready' });
    assert.equal(asked, false);
  });

  test('missing packages as root with apt: the install script runs', () => {
    assert.deepEqual(decideHostSetup(facts({ missing: ['runc', 'skopeo'], root: true })), {
      kind: 'install',
      packages: ['runc', 'skopeo'],
      command: ['bash', INSTALL_SCRIPT],
    });
  });

  test('not root but sudo without a password: the script runs through sudo -n', () => {
    assert.deepEqual(decideHostSetup(facts({ missing: ['runc'], sudo: () => true })), {
      kind: 'install',
      packages: ['runc'],
      command: ['sudo', '-n', 'bash', INSTALL_SCRIPT],
    });
  });

  test('not root and no sudo: stop, naming the command and the packages', () => {
    const action = decideHostSetup(facts({ missing: ['runc', 'prometheus'] }));
    assert.ok(action.kind === 'stop');
    assert.match(action.message, /sudo bash scripts\/install-node-host\.sh/);
    assert.match(action.message, /runc prometheus/);
    assert.match(action.message, /npm run test:unit/);
  });

  test('no apt-get: stop even as root, naming the packages', () => {
    const action = decideHostSetup(facts({ missing: ['runc'], root: true, sudo: () => true }));
    assert.equal(action.kind, 'install');
    const noApt = decideHostSetup(facts({ missing: ['runc'], root: true, apt: false }));
    assert.ok(noApt.kind === 'stop');
    assert.match(noApt.message, /no apt-get/);
    assert.match(noApt.message, /runc/);
  });

  test('no dpkg: the packages cannot be checked; the node check decides later', () => {
    assert.deepEqual(decideHostSetup(facts({ missing: undefined, root: true })), { kind: 'unknown' });
  });
});
