import type { Counter, Gauge, Registry } from 'prom-client';
import { counterOn, gaugeOn } from '../../telemetry/prom-metrics.js';
import type { RuntimeBootstrapper } from '../../api/runtime-bootstrapper.js';
import type { RolloutPhase } from './rollout-state.js';
import type { RolloutPlan } from './wave-planner.js';

/** Rollout metrics: no runtime label, versions only for the few in play at once. */
export interface RolloutMetrics {
  /** 1 for the phase the rollout is in, 0 for the others. */
  readonly phase: Gauge<'phase'>;
  /** Index of the wave in progress (waves + 1 once complete). */
  readonly wave: Gauge<never>;
  readonly halts: Counter<never>;
  /** Runtimes sent back to the stable revision. */
  readonly rollbacks: Counter<never>;
  /** RuntimeBootstrappers by the webhook release installed. */
  readonly runtimesByWebhookVersion: Gauge<'version'>;
}

const PHASES: readonly RolloutPhase[] = [
  'Preflight',
  'Progressing',
  'AwaitingApproval',
  'Paused',
  'Soaking',
  'Halted',
  'Complete',
];

/** Registers the rollout metrics (get-or-create: direct mode restarts with each leadership term). */
export function createRolloutMetrics(registry: Registry): RolloutMetrics {
  return {
    phase: gaugeOn(registry, {
      name: 'rtb_rollout_phase',
      help: 'The rollout phase (1 for the current one).',
      labelNames: ['phase'],
    }),
    wave: gaugeOn(registry, {
      name: 'rtb_rollout_wave',
      help: 'Index of the rollout wave in progress.',
      labelNames: [],
    }),
    halts: counterOn(registry, { name: 'rtb_rollout_halts_total', help: 'Rollouts halted.', labelNames: [] }),
    rollbacks: counterOn(registry, {
      name: 'rtb_rollout_rollbacks_total',
      help: 'Runtimes sent back to the last healthy revision.',
      labelNames: [],
    }),
    runtimesByWebhookVersion: gaugeOn(registry, {
      name: 'rtb_runtimes_by_webhook_version',
      help: 'RuntimeBootstrappers by the webhook release installed.',
      labelNames: ['version'],
    }),
  };
}

/** Sets the phase gauge. */
export function setPhase(metrics: RolloutMetrics, phase: RolloutPhase): void {
  for (const p of PHASES) metrics.phase.set({ phase: p }, p === phase ? 1 : 0);
}

/** No rollout (no policy): no phase is current. */
export function clearPhase(metrics: RolloutMetrics): void {
  for (const p of PHASES) metrics.phase.set({ phase: p }, 0);
}

/** Records a plan just persisted; `before` is the plan it follows (rollbacks are counted once). */
export function recordPlan(
  m: RolloutMetrics,
  plan: RolloutPlan,
  before: RolloutPlan | undefined,
  rbs: readonly RuntimeBootstrapper[],
): void {
  setPhase(m, plan.state.phase);
  m.wave.set(plan.state.wave);
  if (plan.events.includes('halted')) m.halts.inc();
  const newlyBack = plan.rollback.filter((id) => !(before?.rollback.includes(id) ?? false));
  if (newlyBack.length > 0) m.rollbacks.inc(newlyBack.length);
  const byRelease = new Map<string, number>();
  for (const rb of rbs) {
    const v = rb.status?.webhookVersion;
    if (v !== undefined) byRelease.set(v, (byRelease.get(v) ?? 0) + 1);
  }
  m.runtimesByWebhookVersion.reset();
  for (const [version, n] of byRelease) m.runtimesByWebhookVersion.set({ version }, n);
}
