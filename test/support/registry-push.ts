/**
 * Pushes a tiny image (one empty layer, an OCI config) into a real registry through its HTTP API
 * (blob upload, manifest PUT), for tests that need many repositories and tags quickly; skopeo
 * copies of a real image cost far more per image and add nothing a manifest lookup can see.
 */
import { createHash } from 'node:crypto';
import { gzipSync } from 'node:zlib';

/** Where to push: a registry on plain HTTP, with Basic credentials when it wants them. */
export interface PushTarget {
  readonly host: string;
  readonly credentials?: { readonly username: string; readonly password: string } | undefined;
}

const sha256 = (data: Buffer): string => `sha256:${createHash('sha256').update(data).digest('hex')}`;

// An empty tar is two zero blocks.
const LAYER = gzipSync(Buffer.alloc(1024));
const CONFIG = Buffer.from(
  JSON.stringify({
    architecture: 'amd64',
    os: 'linux',
    rootfs: { type: 'layers', diff_ids: [sha256(Buffer.alloc(1024))] },
    config: {},
  }),
);

function headers(target: PushTarget, extra: Record<string, string> = {}): Record<string, string> {
  const c = target.credentials;
  return {
    ...extra,
    ...(c ? { authorization: `Basic ${Buffer.from(`${c.username}:${c.password}`).toString('base64')}` } : {}),
  };
}

async function expectStatus(response: Response, what: string, ...ok: number[]): Promise<void> {
  if (!ok.includes(response.status))
    throw new Error(`${what}: HTTP ${response.status} ${(await response.text()).slice(0, 300)}`);
}

async function pushBlob(target: PushTarget, repository: string, blob: Buffer): Promise<string> {
  const digest = sha256(blob);
  const base = `http://${target.host}/v2/${repository}/blobs`;
  const head = await fetch(`${base}/${digest}`, { method: 'HEAD', headers: headers(target) });
  if (head.status === 200) return digest;
  const start = await fetch(`${base}/uploads/`, { method: 'POST', headers: headers(target) });
  await expectStatus(start, `start an upload to ${repository}`, 202);
  const location = new URL(start.headers.get('location') ?? '', `http://${target.host}`);
  location.searchParams.set('digest', digest);
  const put = await fetch(location, {
    method: 'PUT',
    headers: headers(target, { 'content-type': 'application/octet-stream' }),
    body: blob,
  });
  await expectStatus(put, `upload a blob to ${repository}`, 201);
  return digest;
}

/** Pushes the tiny image as `<host>/<repository>:<tag>` and returns that reference. */
export async function pushTinyImage(target: PushTarget, repository: string, tag: string): Promise<string> {
  const [configDigest, layerDigest] = await Promise.all([
    pushBlob(target, repository, CONFIG),
    pushBlob(target, repository, LAYER),
  ]);
  const manifest = JSON.stringify({
    schemaVersion: 2,
    mediaType: 'application/vnd.oci.image.manifest.v1+json',
    config: {
      mediaType: 'application/vnd.oci.image.config.v1+json',
      digest: configDigest,
      size: CONFIG.length,
    },
    layers: [
      { mediaType: 'application/vnd.oci.image.layer.v1.tar+gzip', digest: layerDigest, size: LAYER.length },
    ],
  });
  const put = await fetch(`http://${target.host}/v2/${repository}/manifests/${tag}`, {
    method: 'PUT',
    headers: headers(target, { 'content-type': 'application/vnd.oci.image.manifest.v1+json' }),
    body: manifest,
  });
  await expectStatus(put, `push the manifest of ${repository}:${tag}`, 201);
  return `${target.host}/${repository}:${tag}`;
}
