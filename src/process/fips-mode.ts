import * as nodeCrypto from 'node:crypto';
import type { Logger } from 'pino';

/** Where the rtb image keeps the OpenSSL configuration that activates the FIPS provider (docs/fips.md). */
export const IMAGE_FIPS_OPENSSL_CONF = '/usr/lib/ssl/rtb-fips.cnf';

/** What {@link fipsModeProblem} asks of node:crypto (a parameter, so a test can stand in for it). */
export type FipsProbe = Pick<typeof nodeCrypto, 'getFips' | 'createHash'>;

/**
 * Why FIPS mode is not in force, or undefined when it is: OpenSSL's default properties ask for
 * `fips=yes` (`crypto.getFips()` is 1), an approved digest is served (so a FIPS provider answers
 * the fetches) and MD5, no approved algorithm, is refused.
 */
export function fipsModeProblem(probe: FipsProbe = nodeCrypto): string | undefined {
  if (probe.getFips() !== 1)
    return (
      'crypto.getFips() is 0: no OpenSSL configuration activates the FIPS provider ' +
      `(the rtb image sets OPENSSL_CONF=${IMAGE_FIPS_OPENSSL_CONF}; docs/fips.md)`
    );
  try {
    probe.createHash('sha256').update('').digest();
  } catch (cause) {
    return `SHA-256 is not served (${errorMessage(cause)}): the FIPS provider is not loaded`;
  }
  try {
    probe.createHash('md5');
  } catch {
    return undefined;
  }
  return 'MD5 is still available: algorithms that are not approved are served';
}

/**
 * `--fips`: throws, with the reason, unless FIPS mode is in force; the CLI turns that into one
 * line on stderr and exit status 1. Checked before anything connects or generates a key.
 */
export function requireFipsMode(probe: FipsProbe = nodeCrypto): void {
  const problem = fipsModeProblem(probe);
  if (problem !== undefined) throw new Error(`--fips: FIPS mode is not in force: ${problem}`);
}

/** The start's line saying FIPS mode is in force, with the OpenSSL that serves it. */
export function logFipsMode(logger: Logger): void {
  logger.info(
    { openssl: process.versions.openssl },
    'FIPS mode: the FIPS provider serves every algorithm, MD5 refused',
  );
}

function errorMessage(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
