import { homedir } from 'node:os';
import { join } from 'node:path';

/** The cache root for built binaries and images (outside git): `$RTB_CACHE_DIR` or `~/.cache/rt-bootstrapper`. */
export function cacheRoot(env: NodeJS.ProcessEnv = process.env): string {
  if (env.RTB_CACHE_DIR) return env.RTB_CACHE_DIR;
  const base = env.XDG_CACHE_HOME ?? join(homedir(), '.cache');
  return join(base, 'rt-bootstrapper');
}
