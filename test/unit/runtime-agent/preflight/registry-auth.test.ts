import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import {
  MAX_CHALLENGE_LENGTH,
  parseAuthChallenge,
} from '../../../../src/runtime-agent/preflight/auth-challenge.js';
import {
  credentialsKeyRegistry,
  DockerConfigError,
  readDockerConfig,
} from '../../../../src/runtime-agent/preflight/registry-credentials.js';

/** The Bearer challenge parsed: its realm, service and scope (undefined where not given). */
const bearer = (realm: string, service?: string, scope?: string) => ({
  scheme: 'bearer',
  realm,
  service,
  scope,
});

describe('parseAuthChallenge', () => {
  test("Docker Hub's Bearer challenge", () => {
    assert.deepEqual(
      parseAuthChallenge(
        'Bearer realm="https://auth.docker.io/token",service="registry.docker.io",scope="repository:library/nginx:pull"',
      ),
      bearer('https://auth.docker.io/token', 'registry.docker.io', 'repository:library/nginx:pull'),
    );
  });

  test('ghcr and Harbor style: unquoted and spaced parameters, case-insensitive names', () => {
    assert.deepEqual(
      parseAuthChallenge('bearer Realm=https://ghcr.io/token, service = ghcr.io'),
      bearer('https://ghcr.io/token', 'ghcr.io'),
    );
  });

  test('Basic, alone or after a Bearer without a realm', () => {
    assert.deepEqual(parseAuthChallenge('Basic realm="Registry Realm"'), { scheme: 'basic' });
    assert.deepEqual(parseAuthChallenge('Bearer service="x", Basic realm="y"'), { scheme: 'basic' });
  });

  test('several challenges: Bearer wins, its parameters stop at the next scheme', () => {
    assert.deepEqual(
      parseAuthChallenge(['Basic realm="a"', 'Bearer realm="https://t/x",service="s"']),
      bearer('https://t/x', 's'),
    );
    assert.deepEqual(
      parseAuthChallenge('Bearer realm="https://t/x", Basic realm="b"'),
      bearer('https://t/x'),
    );
  });

  test('escaped quotes in a value', () => {
    const c = parseAuthChallenge('Bearer realm="https://t/x",service="a\\"b"');
    assert.equal(c?.scheme === 'bearer' ? c.service : undefined, 'a"b');
  });

  test('a scheme named inside a quoted value is no challenge; Basic before a comma is one', () => {
    assert.deepEqual(parseAuthChallenge('Basic realm="Bearer realm=https://t/x"'), { scheme: 'basic' });
    assert.equal(parseAuthChallenge('Negotiate, Digest realm="Basic x"'), undefined);
    assert.deepEqual(parseAuthChallenge('Basic, Negotiate'), { scheme: 'basic' });
    assert.deepEqual(
      parseAuthChallenge('Bearer error="x", Bearer realm="https://t/y"'),
      bearer('https://t/y'),
    );
  });

  test('a header longer than the bound is not read', () => {
    const challenge = 'Bearer realm="https://t/x",scope="';
    const at = (length: number): string => `${challenge}${'a'.repeat(length - challenge.length - 1)}"`;
    assert.equal(parseAuthChallenge(at(MAX_CHALLENGE_LENGTH))?.scheme, 'bearer');
    assert.equal(parseAuthChallenge(at(MAX_CHALLENGE_LENGTH + 1)), undefined);
    assert.equal(parseAuthChallenge(['Basic', 'x'.repeat(MAX_CHALLENGE_LENGTH)]), undefined);
  });

  test('nothing usable', () => {
    for (const h of [
      undefined,
      '',
      'Negotiate',
      'Digest realm="x"',
      'Bearer error="invalid_token"',
      'Bearer realm="https://unclosed',
      '= " , =',
    ])
      assert.equal(parseAuthChallenge(h), undefined, String(h));
  });
});

describe('readDockerConfig', () => {
  const b64 = (s: string): string => Buffer.from(s).toString('base64');

  test('auth wins over username/password; a password may hold colons', () => {
    const logins = readDockerConfig(
      JSON.stringify({
        auths: {
          'a.example.com': { auth: b64('u:p:a:ss'), username: 'x', password: 'y' },
          'b.example.com:5000': { username: 'u2', password: 'p2' },
        },
      }),
    );
    assert.deepEqual(logins.get('a.example.com'), { username: 'u', password: 'p:a:ss' });
    assert.deepEqual(logins.get('b.example.com:5000'), { username: 'u2', password: 'p2' });
  });

  test("Docker Hub's names all read as docker.io; URLs as their host; the first key of a registry wins", () => {
    const logins = readDockerConfig(
      JSON.stringify({
        auths: {
          'https://index.docker.io/v1/': { auth: b64('hub:1') },
          'registry-1.docker.io': { auth: b64('hub:2') },
          'https://mirror.example.com/path': { auth: b64('m:1') },
        },
      }),
    );
    assert.deepEqual(logins.get('docker.io'), { username: 'hub', password: '1' });
    assert.deepEqual(logins.get('mirror.example.com'), { username: 'm', password: '1' });
    for (const key of [
      'docker.io',
      'index.docker.io',
      'registry.hub.docker.com',
      'http://registry-1.docker.io',
    ])
      assert.equal(credentialsKeyRegistry(key), 'docker.io', key);
  });

  test('the older map without auths; entries without credentials are left out', () => {
    const logins = readDockerConfig(
      JSON.stringify({
        'a.example.com': { auth: b64('u:p') },
        'b.example.com': {},
        'c.example.com': { auth: b64('nocolon') },
      }),
    );
    assert.deepEqual([...logins.keys()], ['a.example.com']);
  });

  test('not a pull Secret: DockerConfigError, never quoting the text', () => {
    for (const text of ['{"auths":', '[]', '"x"', '{"auths":[1]}']) {
      assert.throws(
        () => readDockerConfig(text),
        (e: unknown) => e instanceof DockerConfigError && !e.message.includes(text),
        text,
      );
    }
  });
});
