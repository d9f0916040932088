import { CONTROLLER_LEASE_NAME, DEFAULT_STATE_CONFIG_MAP } from '../../api/kcp-objects.js';
import { Option, type Command } from 'commander';
import { CONFIG_MAP_KEY, CONFIG_MAP_NAME } from '../../api/webhook-features.js';
import { RUNTIME_NAMESPACE } from '../../api/runtime.js';
import { DEFAULT_ROLLOUT_POLICY_NAME } from '../../api/rollout-policy.js';
import {
  DEFAULT_DIRECT_CONCURRENCY,
  DEFAULT_FULL_RESYNC_EVERY,
} from '../../controller/direct/direct-mode-options.js';
import { DEFAULT_ANNOTATE_CONCURRENCY } from '../../controller/mode.js';
import type { ControllerFlags } from './controller-action.js';

/**
 * `rtb controller`: the KCP controller (sources → mode), with leader election. Only the flags are
 * registered here; the controller (./controller-action.ts) is imported when the command runs.
 */
export function registerControllerCommand(program: Command): void {
  program
    .command('controller')
    .description('watch the sources on the KCP and propagate changes (runs in the KCP, namespace kcp-system)')
    .addOption(
      new Option('--mode <mode>', 'annotate: signal KIM through Runtimes; direct: sync runtimes directly')
        .choices(['annotate', 'direct'])
        .default('annotate'),
    )
    .option('--kubeconfig <file>', 'kubeconfig of the KCP (default: in-cluster, or $KUBECONFIG)')
    .option(
      '--namespace <namespace>',
      'namespace of the sources, Runtimes, Lease and state',
      RUNTIME_NAMESPACE,
    )
    .requiredOption('--pull-secret <name>', 'the registry pull Secret in the namespace')
    .option('--cluster-trust-bundle <name>', 'the ClusterTrustBundle (not watched when omitted)')
    .option('--config-map <name>', 'the webhook ConfigMap in the namespace', CONFIG_MAP_NAME)
    .option('--config-key <key>', 'the ConfigMap key holding the webhook config', CONFIG_MAP_KEY)
    .option(
      '--manifests-config-map <name>',
      "annotate mode: KIM's manifests ConfigMap in the namespace (key manifests.yaml, KIM's default " +
        'runtime-bootstrapper-manifests); a new release in it signals the Runtimes. Not watched when omitted',
    )
    .option('--runtime-selector <selector>', 'label selector narrowing the Runtimes (default: all)')
    .addOption(
      new Option('--signal <kind>', "annotation (KIM's contract) or label (the seed's wording)")
        .choices(['annotation', 'label'])
        .default('annotation'),
    )
    .option('--coalesce <duration>', 'quiet period that turns a burst of changes into one signal', '2s')
    .option(
      '--concurrency <n>',
      `parallel writes to Runtimes (default: ${DEFAULT_DIRECT_CONCURRENCY} in direct mode, ${DEFAULT_ANNOTATE_CONCURRENCY} in annotate mode)`,
    )
    .option(
      '--resync <duration>',
      're-evaluate the sources this often without events; direct mode: the periodic resync (default: 10m in direct mode, 5m in annotate mode)',
    )
    .option('--state-config-map <name>', "ConfigMap keeping the controller's state", DEFAULT_STATE_CONFIG_MAP)
    .option('--metrics-port <port>', 'HTTP port of /healthz, /readyz and /metrics', '8080')
    .option('--metrics-host <address>', 'listen address of that port', '0.0.0.0')
    .option('--leader-elect', 'run the mode on the Lease holder only (default)', true)
    .option('--no-leader-elect', 'run the mode in this process unconditionally (one replica only)')
    .option('--leader-election-id <name>', 'name of the Lease', CONTROLLER_LEASE_NAME)
    .option(
      '--sharding',
      'direct mode: every replica works its share of the runtimes (a Lease of its own each, rendezvous ' +
        'hashing over the live replicas) instead of one leading; --lease-duration etc. time those Leases',
    )
    .option('--lease-duration <duration>', 'how long a standby waits before taking an unrenewed Lease', '15s')
    .option(
      '--renew-deadline <duration>',
      'how long the leader tries to renew before it stops working',
      '10s',
    )
    .option('--retry-period <duration>', 'how often candidates and the leader touch the Lease', '2s')
    .option('--log-level <level>', 'log level', 'info')
    .option(
      '--fips',
      'refuse to start unless FIPS mode is in force: the OpenSSL FIPS provider active, MD5 refused (docs/fips.md)',
    )
    .option(
      '--webhook-image <image>',
      'direct mode: the webhook image installed on runtimes (default: this release)',
    )
    .option(
      '--webhook-priority-class-name <name>',
      "direct mode: the webhook Pods' PriorityClass on runtimes (it must exist there)",
    )
    .option(
      '--webhook-registry-server <registry=url>',
      "direct mode: the webhooks' --registry-server (where their preflight reaches a registry not at https://<registry>; repeatable)",
      (value: string, previous: string[]) => [...previous, value],
      [] as string[],
    )
    .option(
      '--webhook-restart-namespaces <list>',
      "direct mode: comma-separated namespaces (each must exist on every runtime): the trust-bundle restarter's rights as a Role per namespace instead of cluster-wide",
    )
    .option(
      '--webhook-version <version>',
      'direct mode: the webhook version stamped on runtimes (default: this release)',
    )
    .option(
      '--auto-create [selector]',
      'direct mode: keep one RuntimeBootstrapper per Runtime (optionally narrowed by a label selector)',
    )
    .option('--drift-listen <host:port>', 'direct mode: serve the drift listener here (mutual TLS)')
    .option(
      '--tls-min-version <version>',
      'direct mode: the oldest TLS version the drift listener accepts, 1.3 or 1.2 (only for a runtime whose client cannot do 1.3)',
      '1.3',
    )
    .option('--drift-url <url>', 'direct mode: the listener URL as runtimes reach it (https://host:port)')
    .option(
      '--drift-dns-names <names>',
      "direct mode: comma-separated DNS names of the listener's certificate",
    )
    .option('--ca-renew-before <duration>', 'direct mode: rotate the CA this long before it expires', '720h')
    .option(
      '--ca-grace <duration>',
      'direct mode: keep the previous CA trusted this long after a rotation',
      '168h',
    )
    .option(
      '--cert-validity <duration>',
      'direct mode: validity of issued webhook serving and drift client certificates (serving ones renew at half of it)',
      '2160h',
    )
    .option(
      '--cert-renew-before <duration>',
      'direct mode: re-issue drift client certificates this long before they expire',
      '720h',
    )
    .option(
      '--runtime-timeout <duration>',
      'direct mode: a call to a runtime fails after this long without a byte sent or received',
      '10s',
    )
    .option(
      '--runtime-deadline <duration>',
      'direct mode: a call to a runtime fails unless its whole answer came within this long (a server dripping bytes)',
      '30s',
    )
    .option(
      '--full-resync-every <n>',
      'direct mode: re-apply each runtime at least every n-th resync (a share of them each time); otherwise skip a runtime whose attestation matches (1: all, every time)',
      String(DEFAULT_FULL_RESYNC_EVERY),
    )
    .option(
      '--rollout-policy <name>',
      'direct mode: the RolloutPolicy to follow when it exists (docs/rollout.md)',
      DEFAULT_ROLLOUT_POLICY_NAME,
    )
    .option('--no-auto-rollback', 'direct mode: a halted rollout only halts (no rollback)')
    .option(
      '--per-runtime-metrics',
      'direct mode: also export metrics labelled with the runtime ID (rtb_runtime_state and each drift client certificate: one series per runtime)',
    )
    .action(async (flags: ControllerFlags) => {
      const { runController } = await import('./controller-action.js');
      await runController(flags);
    });
}
