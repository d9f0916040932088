// The preflight's registry probe against the real registry the local landscape runs (Debian's
// docker-registry, distribution 2.8, src/envtest/local-registry.ts): open, and behind htpasswd.
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { LocalRegistry } from '../../src/envtest/local-registry.js';
import { RegistryProbe } from '../../src/runtime-agent/preflight/registry-probe.js';
import { pushTinyImage } from '../support/registry-push.js';

const PASSWORD = 'preflight-Pa55word';
let dir: string;
let open: LocalRegistry;
let secured: LocalRegistry;
const probes: RegistryProbe[] = [];

function probe(dockerConfigJson?: string): RegistryProbe {
  const p = new RegistryProbe({
    servers: { [open.host]: `http://${open.host}`, [secured.host]: `http://${secured.host}` },
    dockerConfigJson,
    requestTimeoutMs: 5_000,
  });
  probes.push(p);
  return p;
}

describe('RegistryProbe against the local docker-registry', () => {
  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'rtb-probe-'));
    [open, secured] = await Promise.all([
      LocalRegistry.start({ dir: join(dir, 'open') }),
      LocalRegistry.start({
        dir: join(dir, 'secured'),
        credentials: { username: 'rtb', password: PASSWORD },
      }),
    ]);
    await Promise.all([
      pushTinyImage(open, 'team/app', '1.0'),
      pushTinyImage(secured, 'team/app', '1.0'),
      pushTinyImage(secured, 'library/nginx', '1.27'),
    ]);
  });

  after(async () => {
    for (const p of probes) p.close();
    await Promise.all([open.stop(), secured.stop()]);
    await rm(dir, { recursive: true, force: true });
  });

  test('open registry: ok by tag and by the digest it answers with; missing tag and repository', async () => {
    const p = probe();
    assert.deepEqual(await p.probe(`${open.host}/team/app:1.0`), { result: 'ok' });
    const head = await fetch(`http://${open.host}/v2/team/app/manifests/1.0`, {
      method: 'HEAD',
      headers: { accept: 'application/vnd.oci.image.manifest.v1+json' },
    });
    const digest = head.headers.get('docker-content-digest');
    assert.ok(digest);
    assert.deepEqual(await p.probe(`${open.host}/team/app@${digest}`), { result: 'ok' });
    assert.equal((await p.probe(`${open.host}/team/app:2.0`)).result, 'missing');
    assert.equal((await p.probe(`${open.host}/team/nope:1.0`)).result, 'missing');
  });

  test('secured registry with its credentials: ok and missing', async () => {
    const p = probe(secured.dockerConfigJson());
    assert.deepEqual(await p.probe(`${secured.host}/team/app:1.0`), { result: 'ok' });
    assert.deepEqual(await p.probe(`${secured.host}/library/nginx:1.27`), { result: 'ok' });
    assert.equal((await p.probe(`${secured.host}/team/app:9`)).result, 'missing');
  });

  test('secured registry with wrong or no credentials: refused, the detail free of them', async () => {
    const wrong = JSON.stringify({
      auths: { [secured.host]: { auth: Buffer.from('rtb:wrong-one').toString('base64') } },
    });
    const refused = await probe(wrong).probe(`${secured.host}/team/app:1.0`);
    assert.equal(refused.result, 'refused');
    assert.ok(!(refused.detail ?? '').includes('wrong-one'));
    const none = await probe().probe(`${secured.host}/team/app:1.0`);
    assert.equal(none.result, 'refused');
    assert.match(none.detail ?? '', /has none/);
  });

  test('a registry that is gone: unreachable', async () => {
    const gone = await LocalRegistry.start({ dir: join(dir, 'gone') });
    const host = gone.host;
    await gone.stop();
    const p = new RegistryProbe({ servers: { [host]: `http://${host}` }, requestTimeoutMs: 2_000 });
    probes.push(p);
    assert.equal((await p.probe(`${host}/team/app:1.0`)).result, 'unreachable');
  });
});
