import { access } from 'node:fs/promises';

/** Whether something exists at `path` (a cache hit). */
export async function pathExists(path: string): Promise<boolean> {
  try {
    await access(path);
    return true;
  } catch {
    return false;
  }
}
