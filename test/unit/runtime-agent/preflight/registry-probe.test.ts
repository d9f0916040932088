import assert from 'node:assert/strict';
import { after, describe, test } from 'node:test';
import {
  DOCKER_HUB_API_HOST,
  MANIFEST_ACCEPT,
  ProbeAbortedError,
  RegistryProbe,
  registryApiHost,
  type RegistryProbeOptions,
} from '../../../../src/runtime-agent/preflight/registry-probe.js';
import {
  startFakeRegistry,
  type FakeRegistry,
  type FakeRegistryOptions,
} from '../../../support/fake-registry.js';

const DIGEST = 'sha256:' + 'b'.repeat(64);
const USER = 'robot';
const PASSWORD = 's3cret-Pa55';

const dockerConfig = (
  host: string,
  o: { username?: string; password?: string; style?: 'auth' | 'fields' } = {},
): string => {
  const username = o.username ?? USER;
  const password = o.password ?? PASSWORD;
  const entry =
    o.style === 'fields'
      ? { username, password }
      : { auth: Buffer.from(`${username}:${password}`).toString('base64') };
  return JSON.stringify({ auths: { [host]: entry } });
};

const opened: { close(): Promise<void> | void }[] = [];
after(async () => {
  for (const o of opened.splice(0)) await o.close();
});

async function registry(o: FakeRegistryOptions): Promise<FakeRegistry> {
  const r = await startFakeRegistry({ manifests: ['app/a:1', `app/b@${DIGEST}`, 'app/latest:latest'], ...o });
  opened.push(r);
  return r;
}

function probeFor(r: FakeRegistry, o: RegistryProbeOptions = {}): RegistryProbe {
  const p = new RegistryProbe({
    ...(r.caPem === undefined ? { servers: { [r.host]: `http://${r.host}` } } : { ca: r.caPem }),
    requestTimeoutMs: 2_000,
    ...o,
  });
  opened.push({
    close: () => {
      p.close();
    },
  });
  return p;
}

/** Asserts no credential of the tests appears in any detail. */
function assertNoSecret(detail: string | undefined): void {
  if (detail === undefined) return;
  for (const s of [PASSWORD, Buffer.from(`${USER}:${PASSWORD}`).toString('base64'), 'wrong-password'])
    assert.ok(!detail.includes(s), `detail leaks a credential: ${detail}`);
}

describe('RegistryProbe against a registry double on loopback', () => {
  test('an open registry: ok by tag, by digest and by the implied latest; missing otherwise', async () => {
    const r = await registry({});
    const p = probeFor(r);
    assert.deepEqual(await p.probe(`${r.host}/app/a:1`), { result: 'ok' });
    assert.deepEqual(await p.probe(`${r.host}/app/b@${DIGEST}`), { result: 'ok' });
    assert.deepEqual(await p.probe(`${r.host}/app/latest`), { result: 'ok' });
    const missing = await p.probe(`${r.host}/app/a:2`);
    assert.equal(missing.result, 'missing');
    assert.match(missing.detail ?? '', /404/);
    assert.equal((await p.probe(`${r.host}/nope/x:1`)).result, 'missing');
    // Every request a HEAD on the manifest path, asking for every manifest type a runtime takes.
    assert.ok(r.requests.every((q) => q.method === 'HEAD' && q.path.startsWith('/v2/')));
    assert.deepEqual(
      r.requests.slice(0, 2).map((q) => q.path),
      ['/v2/app/a/manifests/1', `/v2/app/b/manifests/${DIGEST}`],
    );
    assert.ok(r.requests.every((q) => q.accept === MANIFEST_ACCEPT));
    for (const type of [
      'application/vnd.oci.image.index.v1+json',
      'application/vnd.oci.image.manifest.v1+json',
      'application/vnd.docker.distribution.manifest.list.v2+json',
      'application/vnd.docker.distribution.manifest.v2+json',
    ])
      assert.ok(MANIFEST_ACCEPT.includes(type), type);
  });

  describe('Basic', () => {
    test('the first 401 is answered with the credentials; later images go with them at once', async () => {
      const r = await registry({ auth: { kind: 'basic', username: USER, password: PASSWORD } });
      const p = probeFor(r, { dockerConfigJson: dockerConfig(r.host) });
      assert.deepEqual(await p.probe(`${r.host}/app/a:1`), { result: 'ok' });
      assert.deepEqual(
        r.requests.map((q) => q.auth),
        ['none', 'basic'],
      );
      assert.equal((await p.probe(`${r.host}/app/a:9`)).result, 'missing');
      assert.equal(r.requests.length, 3, 'one request for the second image');
    });

    test('username and password fields work as auth does', async () => {
      const r = await registry({ auth: { kind: 'basic', username: USER, password: PASSWORD } });
      const p = probeFor(r, { dockerConfigJson: dockerConfig(r.host, { style: 'fields' }) });
      assert.deepEqual(await p.probe(`${r.host}/app/a:1`), { result: 'ok' });
    });

    test('wrong credentials: refused, the detail without them', async () => {
      const r = await registry({ auth: { kind: 'basic', username: USER, password: PASSWORD } });
      const p = probeFor(r, { dockerConfigJson: dockerConfig(r.host, { password: 'wrong-password' }) });
      const outcome = await p.probe(`${r.host}/app/a:1`);
      assert.equal(outcome.result, 'refused');
      assert.match(outcome.detail ?? '', /refused the candidate's credentials/);
      assertNoSecret(outcome.detail);
      assert.equal((await p.probe(`${r.host}/app/b@${DIGEST}`)).result, 'refused');
    });

    test('no credentials for that registry: refused, saying so', async () => {
      const r = await registry({ auth: { kind: 'basic', username: USER, password: PASSWORD } });
      const p = probeFor(r, { dockerConfigJson: dockerConfig('other.example.com') });
      const outcome = await p.probe(`${r.host}/app/a:1`);
      assert.equal(outcome.result, 'refused');
      assert.match(outcome.detail ?? '', /has none for 127\.0\.0\.1/);
    });

    test('credentials keyed by URL find their host', async () => {
      const r = await registry({ auth: { kind: 'basic', username: USER, password: PASSWORD } });
      const p = probeFor(r, { dockerConfigJson: dockerConfig(`http://${r.host}/v2/`) });
      assert.deepEqual(await p.probe(`${r.host}/app/a:1`), { result: 'ok' });
    });
  });

  describe('Bearer', () => {
    test('anonymous tokens (a public registry): one token per repository, reused', async () => {
      const r = await registry({ auth: { kind: 'bearer' } });
      const p = probeFor(r);
      assert.deepEqual(await p.probe(`${r.host}/app/a:1`), { result: 'ok' });
      assert.equal((await p.probe(`${r.host}/app/a:2`)).result, 'missing');
      assert.deepEqual(await p.probe(`${r.host}/app/b@${DIGEST}`), { result: 'ok' });
      assert.equal(r.tokensIssued(), 2, 'a token per repository scope');
      const tokenRequests = r.requests.filter((q) => q.path.startsWith('/token'));
      assert.deepEqual(tokenRequests[0], {
        method: 'GET',
        path: '/token?service=fake-registry&scope=repository%3Aapp%2Fa%3Apull',
        auth: 'none',
        accept: 'application/json',
      });
      // The challenge is learned once: the second repository goes to the token endpoint first.
      assert.deepEqual(
        r.requests.map((q) => `${q.method} ${q.auth}`),
        ['HEAD none', 'GET none', 'HEAD bearer', 'HEAD bearer', 'GET none', 'HEAD bearer'],
      );
    });

    test('with credentials: the token is asked for with Basic', async () => {
      const r = await registry({ auth: { kind: 'bearer', login: { username: USER, password: PASSWORD } } });
      const p = probeFor(r, { dockerConfigJson: dockerConfig(r.host) });
      assert.deepEqual(await p.probe(`${r.host}/app/a:1`), { result: 'ok' });
      assert.equal(r.requests.find((q) => q.path.startsWith('/token'))?.auth, 'basic');
    });

    test('the token endpoint refusing the credentials: refused', async () => {
      const r = await registry({ auth: { kind: 'bearer', login: { username: USER, password: PASSWORD } } });
      const p = probeFor(r, { dockerConfigJson: dockerConfig(r.host, { password: 'wrong-password' }) });
      const outcome = await p.probe(`${r.host}/app/a:1`);
      assert.equal(outcome.result, 'refused');
      assert.match(outcome.detail ?? '', /token endpoint .* refused the candidate's credentials \(401\)/);
      assertNoSecret(outcome.detail);
    });

    test('no credentials where the token endpoint wants them: refused, saying so', async () => {
      const r = await registry({ auth: { kind: 'bearer', login: { username: USER, password: PASSWORD } } });
      const outcome = await probeFor(r).probe(`${r.host}/app/a:1`);
      assert.equal(outcome.result, 'refused');
      assert.match(outcome.detail ?? '', /no credentials/);
    });

    test('an expired token is renewed', async () => {
      // Announced life 1 s: renewed before each use (at least 1 s, less the margin).
      const r = await registry({ auth: { kind: 'bearer', expiresIn: 1 } });
      const p = probeFor(r);
      assert.deepEqual(await p.probe(`${r.host}/app/a:1`), { result: 'ok' });
      await new Promise((resolve) => setTimeout(resolve, 1_100));
      assert.deepEqual(await p.probe(`${r.host}/app/a:1`), { result: 'ok' });
      assert.equal(r.tokensIssued(), 2);
    });
  });

  describe('TLS', () => {
    test('a registry whose CA is given: trusted', async () => {
      const r = await registry({ tls: true });
      assert.deepEqual(await probeFor(r).probe(`${r.host}/app/a:1`), { result: 'ok' });
    });

    test('without its CA: unreachable with the TLS reason', async () => {
      const r = await registry({ tls: true });
      const outcome = await probeFor(r, { ca: undefined }).probe(`${r.host}/app/a:1`);
      assert.equal(outcome.result, 'unreachable');
      assert.match(outcome.detail ?? '', /cannot reach 127\.0\.0\.1:\d+: [A-Z_]+/);
    });

    test('a registry served at another address (where Pods reach it) is asked there, with its own credentials', async () => {
      const r = await registry({ auth: { kind: 'basic', username: USER, password: PASSWORD } });
      const p = probeFor(r, {
        servers: { 'mirror.example:5000': `http://${r.host}` },
        dockerConfigJson: dockerConfig('mirror.example:5000'),
      });
      assert.deepEqual(await p.probe('mirror.example:5000/app/a:1'), { result: 'ok' });
      assert.equal((await p.probe('mirror.example:5000/app/a:9')).result, 'missing');
    });

    test('a plain-HTTP registry not listed as such is spoken to over HTTPS (and fails)', async () => {
      const r = await registry({});
      const outcome = await probeFor(r, { servers: {} }).probe(`${r.host}/app/a:1`);
      assert.equal(outcome.result, 'unreachable');
    });
  });

  describe('failures', () => {
    test('5xx and 429: unreachable; 403: refused', async () => {
      const r = await registry({ answers: { 'down/x': 503, 'busy/x': 429, 'forbidden/x': 403 } });
      const p = probeFor(r);
      assert.deepEqual(await p.probe(`${r.host}/down/x:1`), {
        result: 'unreachable',
        detail: `${r.host} answered 503`,
      });
      assert.equal((await p.probe(`${r.host}/busy/x:1`)).result, 'unreachable');
      const forbidden = await p.probe(`${r.host}/forbidden/x:1`);
      assert.equal(forbidden.result, 'refused');
      assert.match(forbidden.detail ?? '', /403/);
    });

    test('nothing listening: unreachable', async () => {
      const r = await registry({});
      await r.close();
      const outcome = await probeFor(r).probe(`${r.host}/app/a:1`);
      assert.equal(outcome.result, 'unreachable');
      assert.match(outcome.detail ?? '', /ECONNREFUSED/);
    });

    test('no answer within the request bound: unreachable, timeout', async () => {
      const r = await registry({ answers: { 'slow/x': 'hang' } });
      const outcome = await probeFor(r, { requestTimeoutMs: 200 }).probe(`${r.host}/slow/x:1`);
      assert.deepEqual(outcome, { result: 'unreachable', detail: `no answer from ${r.host} in time` });
    });

    test("the caller's signal: ProbeAbortedError, not an outcome", async () => {
      const r = await registry({ answers: { 'slow/x': 'hang' } });
      const p = probeFor(r);
      const controller = new AbortController();
      setTimeout(() => {
        controller.abort();
      }, 100);
      await assert.rejects(p.probe(`${r.host}/slow/x:1`, controller.signal), ProbeAbortedError);
    });

    test('a registry without HEAD: the GET answers, with the error code of the body', async () => {
      const r = await registry({ noHead: true });
      const p = probeFor(r);
      assert.deepEqual(await p.probe(`${r.host}/app/a:1`), { result: 'ok' });
      const missing = await p.probe(`${r.host}/app/a:2`);
      assert.equal(missing.result, 'missing');
    });

    test('an invalid reference is missing without a request', async () => {
      const r = await registry({});
      assert.deepEqual(await probeFor(r).probe('Not A Reference'), {
        result: 'missing',
        detail: 'not a valid image reference',
      });
      assert.equal(r.requests.length, 0);
    });

    test('a pull Secret that is not JSON: the constructor says so without quoting it', () => {
      assert.throws(
        () => new RegistryProbe({ dockerConfigJson: `{"auths": ${PASSWORD}` }),
        (e: Error) => e.name === 'DockerConfigError' && !e.message.includes(PASSWORD),
      );
    });
  });

  test('Docker Hub answers at registry-1.docker.io', () => {
    assert.equal(registryApiHost('docker.io'), DOCKER_HUB_API_HOST);
    assert.equal(DOCKER_HUB_API_HOST, 'registry-1.docker.io');
    assert.equal(registryApiHost('ghcr.io'), 'ghcr.io');
  });
});
