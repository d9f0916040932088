import { FlagError } from '../flag-values.js';

const NAMESPACE = /^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/;

/**
 * The namespaces of a `--restart-namespaces` flag (comma-separated; duplicates dropped), or
 * undefined when it is not given (restart rights everywhere). A name that cannot be a namespace
 * is refused, naming it.
 */
export function restartNamespacesOf(
  list: string | undefined,
  flag = '--restart-namespaces',
): string[] | undefined {
  if (list === undefined) return undefined;
  const namespaces = list
    .split(',')
    .map((n) => n.trim())
    .filter((n) => n !== '');
  for (const n of namespaces)
    if (!NAMESPACE.test(n)) throw new FlagError(`${flag}: "${n}" is not a namespace name`);
  return [...new Set(namespaces)];
}
