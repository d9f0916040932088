import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, test } from 'node:test';
import { MATRIX_KUBERNETES_VERSIONS } from '../../../src/envtest/kubernetes-versions.js';
import { isMatrixFile, matrixVersions, planMatrix } from '../../../scripts/test-matrix.js';

describe('the test version matrix', () => {
  test('a file joins it with the marker line, anywhere but as a line of its own', () => {
    assert.ok(isMatrixFile('// test-matrix: kubernetes\nimport x from "y";\n'));
    assert.ok(isMatrixFile('/**\n * doc\n */\n// test-matrix: kubernetes  \n'));
    assert.ok(!isMatrixFile('// no matrix\n'));
    assert.ok(!isMatrixFile("const s = '// test-matrix: kubernetes';\n"));
  });

  test('the marked files leave the plain run and run once per minor', () => {
    const plan = planMatrix(
      [
        { path: 'a.test.ts', source: '// test-matrix: kubernetes\n' },
        { path: 'b.test.ts', source: 'plain\n' },
        { path: 'c.test.ts', source: '// test-matrix: kubernetes\n' },
      ],
      ['1.34', '1.37'],
    );
    assert.deepEqual(plan.plain, ['b.test.ts']);
    assert.deepEqual(plan.runs, [
      { kubernetes: '1.34', files: ['a.test.ts', 'c.test.ts'] },
      { kubernetes: '1.37', files: ['a.test.ts', 'c.test.ts'] },
    ]);
    assert.deepEqual(planMatrix([{ path: 'b.test.ts', source: '' }], ['1.34']).runs, []);
  });

  test('the minors: RTB_TEST_MATRIX, else RTB_TEST_KUBERNETES alone, else the default list', () => {
    assert.deepEqual(matrixVersions({}), MATRIX_KUBERNETES_VERSIONS);
    assert.deepEqual(matrixVersions({ RTB_TEST_MATRIX: '1.34, 1.37,1.34' }), ['1.34', '1.37']);
    assert.deepEqual(matrixVersions({ RTB_TEST_KUBERNETES: '1.37' }), ['1.37']);
    assert.deepEqual(matrixVersions({ RTB_TEST_MATRIX: '1.37', RTB_TEST_KUBERNETES: '1.34' }), ['1.37']);
    assert.throws(() => matrixVersions({ RTB_TEST_MATRIX: '1.34,1.36' }), /RTB_TEST_MATRIX "1\.36"/);
  });

  test('the files that touch ClusterTrustBundle through an API server are marked', () => {
    for (const name of [
      'control-plane',
      'direct-trust-status',
      'trust-restart',
      'direct-mode',
      'webhook-admission',
      'controller-annotate',
    ]) {
      const source = readFileSync(new URL(`../../integration/${name}.test.ts`, import.meta.url), 'utf8');
      assert.ok(isMatrixFile(source), `test/integration/${name}.test.ts is on the matrix`);
    }
  });
});
