import { Option, type Command } from 'commander';
import {
  RUNTIME_NAMESPACE,
  WEBHOOK_CERT_LEASE,
  WEBHOOK_SERVICE,
  WEBHOOK_TLS_SECRET,
} from '../../api/runtime-names.js';
import { RESTARTER_LEASE } from '../../api/trust-stamp.js';
import { SHUTDOWN_DELAY_SECONDS } from '../../api/serving-limits.js';
import type { WebhookFlags } from './webhook-action.js';

/**
 * `rtb webhook`: the mutating admission webhook of a runtime. Only the flags are registered here;
 * the implementation (./webhook-action.ts) is imported when the command runs, so other commands
 * do not load it and `rtb webhook` does not load the others.
 */
export function registerWebhookCommand(program: Command): void {
  program
    .command('webhook')
    .description('serve the mutating admission webhook for Pods (runs in each runtime)')
    .option(
      '--tls-cert <file>',
      'serving certificate (PEM), re-read when it changes; without it the webhook keeps its own in --tls-secret',
    )
    .option('--tls-key <file>', 'serving key (PEM), re-read when it changes (with --tls-cert)')
    .option(
      '--tls-secret <namespace/name>',
      `the Secret of the webhook's own serving certificate (default: $POD_NAMESPACE or ${RUNTIME_NAMESPACE}, /${WEBHOOK_TLS_SECRET})`,
    )
    .option(
      '--webhook-service <name>',
      'the Service whose DNS names the own certificate covers',
      WEBHOOK_SERVICE,
    )
    .option(
      '--tls-extra-san <name-or-ip>',
      'one more DNS name or IP address for the own certificate (repeatable)',
      (value: string, previous: string[]) => [...previous, value],
      [] as string[],
    )
    .option(
      '--cert-lease <name>',
      'the Lease electing the replica that writes the own certificate',
      WEBHOOK_CERT_LEASE,
    )
    .option(
      '--serving-cert-issuer <own|external>',
      'who writes --tls-secret and the caBundle: own (one elected replica, its own CA) or external ' +
        '(the KCP in direct mode; the replicas only serve what the Secret holds)',
      'own',
    )
    .option('--port <port>', 'HTTPS port', '9443')
    .option(
      '--metrics-port <port>',
      'serve /metrics over plain HTTP on this port (for a NetworkPolicy admitting scrapers only); default: on the HTTPS port',
    )
    .option('--host <address>', 'listen address', '0.0.0.0')
    .option(
      '--tls-min-version <version>',
      'the oldest TLS version served and offered to the drift listener, 1.3 or 1.2 (only for a peer that cannot do 1.3)',
      '1.3',
    )
    .option(
      '--fips',
      'refuse to start unless FIPS mode is in force: the OpenSSL FIPS provider active, MD5 refused (docs/fips.md)',
    )
    .option('--kubeconfig <file>', 'kubeconfig (default: in-cluster, or $KUBECONFIG)')
    .option('--config-file <file>', 'read the config from this file instead of the ConfigMap')
    .option('--config-map <namespace/name>', 'the config ConfigMap', 'kyma-system/rt-bootstrapper-config')
    .option('--config-key <key>', 'the ConfigMap key', 'rt-bootstrapper-config.json')
    .option(
      '--status-config-map <namespace/name>',
      'report the set version loaded or refused in this ConfigMap (direct mode: the KCP gates rollouts on it)',
    )
    .option(
      '--fail-closed',
      'refuse a Pod when mutating it fails (default: admit it unchanged with a warning)',
    )
    .option(
      '--landscape <landscape>',
      'landscape for feature set-landscape (env KYMA_LANDSCAPE, e.g. NS2); wins over the config\'s "landscape"',
    )
    .option('--log-level <level>', 'log level', 'info')
    .option(
      '--drift-url <url>',
      'KCP drift listener (https://host:port); enables reporting tampering with our objects',
    )
    .option('--drift-cert <file>', 'drift client certificate', '/etc/rt-bootstrapper/watcher/tls.crt')
    .option('--drift-key <file>', 'drift client key', '/etc/rt-bootstrapper/watcher/tls.key')
    .option('--drift-ca <file>', 'CA bundle of the KCP listener', '/etc/rt-bootstrapper/watcher/ca.crt')
    .addOption(new Option('--reuse-answers <count>', 'ignored (earlier releases reused answers)').hideHelp())
    .option(
      '--shutdown-delay <duration>',
      'on SIGTERM, keep serving this long (readiness failing, connections closed after each answer) so the Pod leaves the Service first',
      `${SHUTDOWN_DELAY_SECONDS}s`,
    )
    .option(
      '--no-trust-restart',
      "do not restart Pods that run an old trust bundle (docs/trust-restart.md); the stamp is still written, and the runtime agent's other parts still run",
    )
    .option(
      '--restart-concurrency <count>',
      'owners restarting at once on a trust-bundle change (each waits for the previous rollout)',
      '1',
    )
    .option(
      '--restart-delay <duration>',
      'after a trust-bundle change, wait this long before the first restart (new Pods must see the new bundle: kubelet may serve the old one for 5 minutes)',
      '6m',
    )
    .option(
      '--restart-deadline <duration>',
      'a restart not completed after this is reported and the next one goes on',
      '10m',
    )
    .option(
      '--restart-lease <name>',
      'the Lease electing the runtime agent among the replicas (trust restarter, attestor, workload health, preflight, renamed-copy sweep)',
      RESTARTER_LEASE,
    )
    .option(
      '--restart-namespaces <list>',
      'comma-separated namespaces the restarter holds restart rights in (rtb render webhook --restart-namespaces); stale Pods elsewhere are counted, never restarted (default: everywhere)',
    )
    .option(
      '--escaped-interval <duration>',
      'how often the runtime agent counts running Pods that do not follow the set in force (escaped Pods, docs/runtime-agent.md); 0: never',
      '5m',
    )
    .option(
      '--repair-escaped',
      'restart the owners of escaped Pods (one at a time, each waited for up to --restart-deadline); bare Pods are only reported',
    )
    .option(
      '--admission-policy <mode>',
      "the admission policy (docs/admission-policy.md): install (the runtime agent installs it where the runtime serves MutatingAdmissionPolicy and no KCP wrote it, as KIM's manifests ask), report (only report the admission path; direct mode, where the KCP installs it), off",
      'report',
    )
    .option(
      '--registry-server <registry=url>',
      'where the preflight reaches a registry not at https://<registry> (as containerd hosts.toml server), e.g. 127.0.0.1:5000=http://10.0.0.1:5000 (repeatable)',
      (value: string, previous: string[]) => [...previous, value],
      [] as string[],
    )
    .action(async (flags: WebhookFlags) => {
      const { runWebhook } = await import('./webhook-action.js');
      await runWebhook(flags);
    });
}
