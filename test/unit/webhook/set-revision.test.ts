import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import {
  CONTENT_VERSION_ANNOTATION,
  setVersionOf,
  UNWRITTEN_BUNDLE_ANNOTATION,
} from '../../../src/api/set-version.js';
import type { WebhookStatusReport } from '../../../src/api/webhook-status.js';
import { silentLogger } from '../../../src/telemetry/logger.js';
import { ConfigHolder } from '../../../src/webhook/config-holder.js';
import { SetRevision, UNKNOWN_PART, type SetPart, type SetParts } from '../../../src/webhook/set-revision.js';
import { nextReport } from '../../../src/webhook/status-reporter.js';
import { seedConfigText } from '../../support/fixtures.js';

const BAD = '{"availableFeatures":["rt-cfg.kyma-project.io/nope"]}';
const known = (version: string | undefined): SetPart => ({ known: true, version });

/** A revision over a real holder, with parts set by the test and the report as the reporter keeps it. */
function setup(
  initial: { pullSecret: SetPart; trustBundle: SetPart } = {
    pullSecret: known('s1'),
    trustBundle: known('b1'),
  },
): {
  holder: ConfigHolder;
  revision: SetRevision;
  parts: { pullSecret: SetPart; trustBundle: SetPart };
  report: () => WebhookStatusReport;
  offers: () => number;
  changes: () => number;
  read: (text: string, annotations: Record<string, string> | undefined) => void;
} {
  const holder = new ConfigHolder(silentLogger());
  let report: WebhookStatusReport = {};
  let offers = 0;
  let changes = 0;
  holder.onChange(() => changes++);
  const parts = { ...initial };
  const revision = new SetRevision(
    holder,
    (): SetParts => parts,
    (version, offer) => {
      offers++;
      if (version !== undefined) report = nextReport(report, version, offer);
    },
  );
  return {
    holder,
    revision,
    parts,
    report: () => report,
    offers: () => offers,
    changes: () => changes,
    read: (text, annotations) => {
      revision.configMap({ text, source: 'test', annotations });
    },
  };
}

const cm = (version: string, extra: Record<string, string> = {}): Record<string, string> => ({
  [CONTENT_VERSION_ANNOTATION]: version,
  ...extra,
});

/** The revision in force is the set version of `versions`, and it is what the report says was loaded. */
function takenAndReported(s: ReturnType<typeof setup>, versions: string[]): void {
  const v = setVersionOf(versions);
  assert.equal(s.holder.revision, v);
  assert.deepEqual(s.report(), { loadedVersion: v });
}

describe('the revision is the set version of the runtime’s objects', () => {
  test('the ConfigMap read with every part known: its set version, taken and reported', () => {
    const s = setup();
    s.read(seedConfigText(), cm('c1'));
    takenAndReported(s, ['s1', 'b1', 'c1']);
  });

  test('only the pull Secret changed: a new revision and report, the same text not taken again', () => {
    const s = setup();
    s.read(seedConfigText(), cm('c1'));
    assert.equal(s.changes(), 1);
    s.parts.pullSecret = known('s2');
    s.revision.recompute();
    takenAndReported(s, ['s2', 'b1', 'c1']);
    assert.equal(s.changes(), 1, 'the configuration itself did not change');
    const offers = s.offers();
    s.revision.recompute();
    assert.equal(s.offers(), offers, 'nothing moved: nothing offered again');
  });

  test('only the bundle changed: a new revision and report', () => {
    const s = setup();
    s.read(seedConfigText(), cm('c1'));
    s.parts.trustBundle = known('b2');
    s.revision.recompute();
    takenAndReported(s, ['s1', 'b2', 'c1']);
  });

  test('the ConfigMap changed: its content version counts', () => {
    const s = setup();
    s.read(seedConfigText(), cm('c1'));
    s.read(seedConfigText().replace('ghcr.io', 'quay.io'), cm('c2'));
    takenAndReported(s, ['s1', 'b1', 'c2']);
    assert.equal(s.holder.get()?.overrides['replace.me'], 'quay.io');
  });

  test('a pull Secret missing (listed, not there) counts as missing', () => {
    const s = setup({ pullSecret: known(undefined), trustBundle: known('b1') });
    s.read(seedConfigText(), cm('c1'));
    assert.equal(s.holder.revision, setVersionOf([undefined, 'b1', 'c1']));
    s.parts.pullSecret = known('s1');
    s.revision.recompute();
    assert.equal(s.holder.revision, setVersionOf(['s1', 'b1', 'c1']), 'back: the set it names');
  });

  test('the unwritten-bundle annotation stands for the bundle; the bundle object is not counted', () => {
    const s = setup({ pullSecret: known('s1'), trustBundle: UNKNOWN_PART });
    s.read(seedConfigText(), cm('c1', { [UNWRITTEN_BUNDLE_ANNOTATION]: 'kb1' }));
    assert.equal(s.holder.revision, setVersionOf(['s1', 'kb1', 'c1']), 'an unread bundle does not hold it');
    s.parts.trustBundle = known('b9');
    s.revision.recompute();
    assert.equal(s.holder.revision, setVersionOf(['s1', 'kb1', 'c1']));
    s.read(seedConfigText(), cm('c1', { [UNWRITTEN_BUNDLE_ANNOTATION]: '-' }));
    assert.equal(s.holder.revision, setVersionOf(['s1', undefined, 'c1']), '`-`: the KCP has none');
  });

  test('a refused config under a new set version is reported refused, and again when only the Secret moves', () => {
    const s = setup();
    s.read(seedConfigText(), cm('c1'));
    const v1 = setVersionOf(['s1', 'b1', 'c1']);
    s.read(BAD, cm('c2'));
    const v2 = setVersionOf(['s1', 'b1', 'c2']);
    assert.equal(s.report().loadedVersion, v1);
    assert.equal(s.report().refusedVersion, v2);
    assert.equal(s.holder.revision, v1, 'the text in force keeps its revision');
    s.parts.pullSecret = known('s2');
    s.revision.recompute();
    assert.equal(s.report().refusedVersion, setVersionOf(['s2', 'b1', 'c2']));
    assert.equal(s.report().loadedVersion, v1);
  });

  test('a part not read yet holds the revision and the report until it is', () => {
    const s = setup({ pullSecret: UNKNOWN_PART, trustBundle: known('b1') });
    s.read(seedConfigText(), cm('c1'));
    assert.equal(s.holder.get() !== undefined, true, 'the text is taken at once');
    assert.equal(s.holder.revision, undefined);
    assert.deepEqual(s.report(), {});
    s.parts.pullSecret = known('s1');
    s.revision.recompute();
    assert.equal(s.holder.revision, setVersionOf(['s1', 'b1', 'c1']));
    assert.deepEqual(s.report(), { loadedVersion: setVersionOf(['s1', 'b1', 'c1']) });
  });

  test('a ConfigMap without a content version has no revision, whatever the parts', () => {
    const s = setup();
    s.read(seedConfigText(), undefined);
    assert.equal(s.holder.revision, undefined);
    assert.deepEqual(s.report(), {});
  });

  test('a text that names another pull Secret waits for that Secret (the parts follow the holder)', () => {
    const holder = new ConfigHolder(silentLogger());
    const versions = new Map([
      ['registry-credentials', 's1'],
      ['other', 's-other'],
    ]);
    // As the watch does: it answers for the name in force only once it listed that name.
    let listed = 'registry-credentials';
    const reported: (string | undefined)[] = [];
    const revision = new SetRevision(
      holder,
      () => {
        const name = holder.get()?.imagePullSecret.name;
        return {
          pullSecret: name === listed ? known(versions.get(name)) : UNKNOWN_PART,
          trustBundle: known('b1'),
        };
      },
      (version) => reported.push(version),
    );
    revision.configMap({ text: seedConfigText(), source: 'test', annotations: cm('c1') });
    const renamed = seedConfigText().replace('"name": "registry-credentials"', '"name": "other"');
    revision.configMap({ text: renamed, source: 'test', annotations: cm('c2') });
    assert.equal(holder.revision, undefined, 'not the old Secret’s version under the new text');
    assert.deepEqual(reported, [setVersionOf(['s1', 'b1', 'c1']), undefined]);
    listed = 'other';
    revision.recompute();
    assert.equal(holder.revision, setVersionOf(['s-other', 'b1', 'c2']));
  });
});
