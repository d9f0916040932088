import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { LocalRegistry } from '../envtest/local-registry.js';
import type { PauseImage } from '../envtest/pause-image.js';
import type { RtbImage } from '../envtest/rtb-image.js';
import { SEED_IMAGE } from './embedded-defaults.js';

/** A landscape's two registries on loopback, as upstream's e2e runs them on k3d. */
export interface LandscapeRegistries {
  /** Open: the rtb image the webhook Deployments run, and the seed image as a second mirror. */
  readonly open: LocalRegistry;
  /** Behind credentials (`dockerConfigJson()`): what the seed config's override points at. */
  readonly secured: LocalRegistry;
  /** The rtb image in the open registry. */
  readonly openImage: string;
  /** The rtb image in the secured registry. */
  readonly securedImage: string;
  /** The seed Pod's image (the pause image) as the webhook rewrites it to the secured registry. */
  readonly seedImage: string;
  /** The same in the open registry. */
  readonly openSeedImage: string;
  stop(): Promise<void>;
}

/** The seed image's repository and tag: `kyma-project/rt-bootstrapper/pause` and `e2e`. */
export function seedRepositoryAndTag(): { repository: string; tag: string } {
  const path = SEED_IMAGE.slice(SEED_IMAGE.indexOf('/') + 1);
  const colon = path.lastIndexOf(':');
  return { repository: path.slice(0, colon), tag: path.slice(colon + 1) };
}

/**
 * Starts both registries under `dir` (the secured one with a fresh random password) and pushes
 * the rtb image to both and the locally built pause image, as the seed's image, to both.
 */
export async function startLandscapeRegistries(o: {
  dir: string;
  image: RtbImage;
  pause: PauseImage;
  username?: string;
}): Promise<LandscapeRegistries> {
  const stops: (() => Promise<void>)[] = [];
  const stop = async (): Promise<void> => {
    for (const s of stops.splice(0).reverse()) await s();
  };
  try {
    const open = await LocalRegistry.start({ dir: join(o.dir, 'open') });
    stops.push(() => open.stop());
    const secured = await LocalRegistry.start({
      dir: join(o.dir, 'secured'),
      credentials: { username: o.username ?? 'rtb-local', password: randomBytes(18).toString('base64url') },
    });
    stops.push(() => secured.stop());
    const seed = seedRepositoryAndTag();
    const pushSeed = (r: LocalRegistry): Promise<string> =>
      r.push(o.pause.archive, o.pause.tag, seed.repository, { transport: 'oci-archive', as: seed.tag });
    const [openImage, securedImage, seedImage, openSeedImage] = await Promise.all([
      open.push(o.image.layoutDir, o.image.tag, o.image.name),
      secured.push(o.image.layoutDir, o.image.tag, o.image.name),
      pushSeed(secured),
      pushSeed(open),
    ]);
    return { open, secured, openImage, securedImage, seedImage, openSeedImage, stop };
  } catch (error) {
    await stop();
    throw error;
  }
}
