// The Kubernetes version matrix of scripts/run-tests.mjs: which test files run once per pinned
// minor, and on which minors (docs/kubernetes-versions.md).
import {
  KUBERNETES_VERSION_ENV,
  MATRIX_KUBERNETES_VERSIONS,
  parseKubernetesVersion,
  type KubernetesVersion,
} from '../src/envtest/kubernetes-versions.js';

/** The line (by convention a file's first) that puts a test file on the matrix. */
export const MATRIX_MARKER = '// test-matrix: kubernetes';

/** Comma-separated minors the matrix runs on, replacing MATRIX_KUBERNETES_VERSIONS (`1.34,1.37`). */
export const MATRIX_ENV = 'RTB_TEST_MATRIX';

/** A test file and its text. */
export interface TestFile {
  readonly path: string;
  readonly source: string;
}

/** One run of the matrix files on one minor. */
export interface MatrixRun {
  readonly kubernetes: KubernetesVersion;
  readonly files: readonly string[];
}

/** Whether a test file's text holds the marker line. */
export function isMatrixFile(source: string): boolean {
  return source.split('\n').some((line) => line.trim() === MATRIX_MARKER);
}

/**
 * The minors the matrix runs on: `RTB_TEST_MATRIX` when set; else the one minor that
 * `RTB_TEST_KUBERNETES` names, since that process asks for one minor throughout; else
 * MATRIX_KUBERNETES_VERSIONS.
 */
export function matrixVersions(env: NodeJS.ProcessEnv): readonly KubernetesVersion[] {
  const list = env[MATRIX_ENV]?.trim();
  if (list) {
    const versions = list.split(',').map((v) => parseKubernetesVersion(v, MATRIX_ENV));
    return [...new Set(versions)];
  }
  const one = env[KUBERNETES_VERSION_ENV]?.trim();
  if (one) return [parseKubernetesVersion(one, KUBERNETES_VERSION_ENV)];
  return MATRIX_KUBERNETES_VERSIONS;
}

/** Splits the files into those run once as they are and one run of the marked ones per minor. */
export function planMatrix(
  files: readonly TestFile[],
  versions: readonly KubernetesVersion[],
): { readonly plain: readonly string[]; readonly runs: readonly MatrixRun[] } {
  const marked = files.filter((f) => isMatrixFile(f.source)).map((f) => f.path);
  const plain = files.filter((f) => !isMatrixFile(f.source)).map((f) => f.path);
  const runs = marked.length === 0 ? [] : versions.map((kubernetes) => ({ kubernetes, files: marked }));
  return { plain, runs };
}
