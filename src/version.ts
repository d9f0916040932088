import { readFileSync } from 'node:fs';

let cached: string | undefined;

/** The version of this package, read once from package.json (works from src/ under tsx and from dist/). */
export function packageVersion(): string {
  if (cached !== undefined) return cached;
  const url = new URL('../package.json', import.meta.url);
  const parsed: unknown = JSON.parse(readFileSync(url, 'utf8'));
  const version =
    typeof parsed === 'object' && parsed !== null && 'version' in parsed && typeof parsed.version === 'string'
      ? parsed.version
      : '0.0.0';
  cached = version;
  return version;
}
