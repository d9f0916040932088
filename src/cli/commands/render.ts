import { Option, type Command } from 'commander';
import type {
  RenderAdmissionPolicyFlags,
  RenderControllerFlags,
  RenderKimFlags,
  RenderMonitoringFlags,
  RenderWebhookFlags,
} from './render-action.js';
import {
  CONTROLLER_METRICS_SERVICE,
  DEFAULT_DASHBOARD_BASE_URL,
  DEFAULT_RUNBOOK_BASE_URL,
} from '../../monitoring/monitoring-options.js';
import { WEBHOOK_METRICS_SERVICE } from '../../api/runtime-names.js';

/**
 * `rtb render …`: prints the manifests a runtime (webhook) or the KCP (controller) needs. The
 * renderers (and yaml) are imported when a sub-command runs (./render-action.ts).
 */
export function registerRenderCommand(program: Command): void {
  const render = program.command('render').description('print manifests');
  render
    .command('webhook')
    .description(
      "print the runtime's webhook manifests (ServiceAccount, RBAC, Deployment, PDB, Service, MutatingWebhookConfiguration)",
    )
    .option('--image <image>', 'webhook image (default: this release)')
    .option('--namespace <namespace>', 'namespace', 'kyma-system')
    .option('--replicas <n>', 'replicas', '2')
    .option('--ca-bundle <file>', "PEM of the CA that signed the webhook's serving certificate")
    .option('--url <url>', 'call this URL instead of the in-cluster Service')
    .option('--failure-policy <policy>', 'Ignore or Fail', 'Ignore')
    .option('--version <version>', 'release label app.kubernetes.io/version (default: this release)')
    .option(
      '--landscape <landscape>',
      'the landscape for the set-landscape feature (rtb webhook --landscape)',
    )
    .option('--priority-class-name <name>', "the webhook Pods' PriorityClass (it must exist)")
    .option(
      '--restart-namespaces <list>',
      "comma-separated namespaces (each must exist): the trust-bundle restarter's rights as a Role per namespace instead of cluster-wide (docs/webhook-hardening.md)",
    )
    .option(
      '--service-monitor',
      `also a metrics Service and a ServiceMonitor (job: ${WEBHOOK_METRICS_SERVICE}, what rtb render monitoring selects)`,
    )
    .action(async (flags: RenderWebhookFlags) => {
      const { renderWebhook } = await import('./render-action.js');
      renderWebhook(flags);
    });
  render
    .command('admission-policy')
    .description(
      'print the MutatingAdmissionPolicy, its binding and its parameters (a ConfigMap) compiled from the webhook config: the mutation inside the API server (docs/admission-policy.md)',
    )
    .requiredOption(
      '--config <config.json>',
      'the webhook config (rt-bootstrapper-config.json), as rtb mutate reads it',
    )
    .option('--landscape <landscape>', 'as rtb webhook --landscape: the value of KYMA_LANDSCAPE')
    .option(
      '--trust-bundle-name <name>',
      "the ClusterTrustBundle's name instead of the config's clusterTrustBundle.name",
    )
    .option(
      '--trust-bundle-hash <sha256>',
      'the SHA-256 of the bundle, stamped on each Pod that gets the mount',
    )
    .option('--revision <revision>', 'the set version stamped on each Pod the policy changes')
    .addOption(
      new Option(
        '--api-version <version>',
        'admissionregistration.k8s.io version: v1 (1.36 on) or v1beta1 (1.34-1.35)',
      )
        .choices(['v1', 'v1beta1'])
        .default('v1'),
    )
    .option('--namespace <namespace>', "the parameters' namespace", 'kyma-system')
    .addOption(new Option('-o, --output <format>', 'output').choices(['yaml', 'json']).default('yaml'))
    .action(async (flags: RenderAdmissionPolicyFlags) => {
      const { renderAdmissionPolicyCommand } = await import('./render-action.js');
      renderAdmissionPolicyCommand(flags);
    });
  render
    .command('kim')
    .description(
      "print what KIM's installer reads: ConfigMap runtime-bootstrapper-manifests with the runtime's manifests in key manifests.yaml",
    )
    .option('--image <image>', 'webhook image (default: the release given by --version)')
    .option('--version <version>', 'the release; KIM reinstalls when it changes (default: this release)')
    .option(
      '--landscape <landscape>',
      'the landscape for the set-landscape feature (rtb webhook --landscape)',
    )
    .option('--namespace <namespace>', "the ConfigMap's namespace on the KCP", 'kcp-system')
    .option('--replicas <n>', 'webhook replicas', '2')
    .option('--raw', 'print only the text of manifests.yaml')
    .option('--priority-class-name <name>', "the webhook Pods' PriorityClass (it must exist)")
    .option(
      '--restart-namespaces <list>',
      "comma-separated namespaces (each must exist): the trust-bundle restarter's rights as a Role per namespace instead of cluster-wide (docs/webhook-hardening.md)",
    )
    .action(async (flags: RenderKimFlags) => {
      const { renderKim } = await import('./render-action.js');
      renderKim(flags);
    });
  render
    .command('controller')
    .description(
      "print the KCP controller's manifests (ServiceAccount, least-privilege RBAC incl. the Lease, Deployment)",
    )
    .option('--image <image>', 'controller image (default: this release)')
    .option('--namespace <namespace>', 'namespace', 'kcp-system')
    .option('--replicas <n>', 'replicas (one leads, the others stand by; with --sharding all work)', '2')
    .requiredOption('--pull-secret <name>', 'the registry pull Secret in the namespace')
    .option('--cluster-trust-bundle <name>', 'the ClusterTrustBundle to watch')
    .option('--config-map <name>', 'the webhook ConfigMap', 'rt-bootstrapper-config')
    .option(
      '--manifests-config-map <name>',
      "annotate mode: watch KIM's manifests ConfigMap (rtb controller --manifests-config-map; read access to it)",
    )
    .option('--runtime-selector <selector>', 'label selector narrowing the Runtimes')
    .option('--signal <kind>', 'annotation or label', 'annotation')
    .option('--coalesce <duration>', 'quiet period coalescing a burst of changes', '2s')
    .addOption(
      new Option('--mode <mode>', 'annotate or direct (direct adds its CRD and RBAC)')
        .choices(['annotate', 'direct'])
        .default('annotate'),
    )
    .option(
      '--sharding',
      'direct mode: every replica works its share of the runtimes (rtb controller --sharding; RBAC for its Leases)',
    )
    .option(
      '--per-runtime-metrics',
      'direct mode: metrics labelled with the runtime ID (rtb controller --per-runtime-metrics; two series per runtime)',
    )
    .action(async (flags: RenderControllerFlags) => {
      const { renderController } = await import('./render-action.js');
      renderController(flags);
    });
  render
    .command('monitoring')
    .description(
      'print the dashboards (ConfigMaps labelled grafana_dashboard: "1", for Plutono) and the alerts (PrometheusRules) of the KCP and of the runtimes',
    )
    .addOption(
      new Option('--part <part>', "the KCP's objects, the runtimes', or both")
        .choices(['kcp', 'runtime', 'all'])
        .default('all'),
    )
    .option('--kcp-namespace <namespace>', "namespace of the KCP's objects", 'kcp-system')
    .option('--runtime-namespace <namespace>', "namespace of the runtimes' objects", 'kyma-system')
    .option('--controller-job <job>', "the job label of the controller's series", CONTROLLER_METRICS_SERVICE)
    .option('--webhook-job <job>', "the job label of the webhook's series", WEBHOOK_METRICS_SERVICE)
    .option(
      '--runbook-base-url <url>',
      'runbook_url of an alert: this plus /<alert>.md',
      DEFAULT_RUNBOOK_BASE_URL,
    )
    .option(
      '--dashboard-base-url <url>',
      'dashboard_url of an alert: this plus /d/<uid> (your Plutono)',
      DEFAULT_DASHBOARD_BASE_URL,
    )
    .option(
      '--service-monitor',
      "also a Service and a ServiceMonitor that scrape the controller (job: the Service's name)",
    )
    .action(async (flags: RenderMonitoringFlags) => {
      const { renderMonitoringCommand } = await import('./render-action.js');
      renderMonitoringCommand(flags);
    });
}
