import type { Command } from 'commander';

/**
 * `rtb control-plane build|clean`: builds (or finds) kube-apiserver and etcd for tests and the
 * local landscape. The implementation is imported when the command runs.
 */
export function registerControlPlaneCommand(program: Command): void {
  const cmd = program
    .command('control-plane')
    .description('build or locate the kube-apiservers and etcd used by tests and `rtb local`');
  cmd
    .command('build')
    .description(
      'build kube-apiserver of every pinned Kubernetes minor, kubectl and etcd from their Go modules once (reused from the cache afterwards)',
    )
    .action(async () => {
      const { resolveAllBinaries } = await import('../../envtest/binaries.js');
      const all = await resolveAllBinaries({ log: (line) => process.stderr.write(`rtb: ${line}\n`) });
      for (const b of all)
        process.stdout.write(`kube-apiserver ${b.kubernetes} (${b.kubernetesVersion}): ${b.kubeApiserver}\n`);
      const last = all.at(-1);
      if (last) {
        const source = all.some((b) => b.source === 'built') ? 'built' : last.source;
        process.stdout.write(
          `kubectl: ${last.kubectl ?? '(none)'}\netcd ${last.etcdVersion}: ${last.etcd}\n(${source})\n`,
        );
      }
    });
  cmd
    .command('host')
    .description(
      'check that this host can run a node (root, and the Debian packages of scripts/install-node-host.sh)',
    )
    .action(async () => {
      const { nodeHostProblem } = await import('../../envtest/node-host.js');
      const problem = await nodeHostProblem();
      if (problem !== undefined) {
        process.stderr.write(`rtb: ${problem}\n`);
        process.exitCode = 1;
        return;
      }
      process.stdout.write('this host can run a node\n');
    });
  cmd
    .command('node')
    .description(
      'build kubelet, kube-controller-manager, kube-scheduler and the pause image once, and check containerd, runc and CNI',
    )
    .action(async () => {
      const { resolveNodeBinaries } = await import('../../envtest/node-binaries.js');
      const b = await resolveNodeBinaries({ log: (line) => process.stderr.write(`rtb: ${line}\n`) });
      process.stdout.write(
        `kubelet ${b.kubernetesVersion}: ${b.kubelet}\nkube-controller-manager: ${b.kubeControllerManager}\n` +
          `kube-scheduler: ${b.kubeScheduler}\npause ${b.pause.tag}: ${b.pause.archive}\ncontainerd: ${b.containerd}\nrunc: ${b.runc}\n`,
      );
    });
  cmd
    .command('image')
    .description(
      'build the rtb OCI image from Debian packages and this checkout (scripts/build-image.sh; cached)',
    )
    .action(async () => {
      const { resolveRtbImage } = await import('../../envtest/rtb-image.js');
      const image = await resolveRtbImage({ log: (line) => process.stderr.write(`rtb: ${line}\n`) });
      process.stdout.write(
        `${image.name}:${image.tag}: ${image.layoutDir} (${image.built ? 'built' : 'cache'})\n`,
      );
    });
  cmd
    .command('clean')
    .description('remove the cached binaries')
    .action(async () => {
      const { cleanCache } = await import('../../envtest/binaries.js');
      await cleanCache();
    });
}
