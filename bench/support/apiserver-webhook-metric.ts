import type { PodClient } from './pod-client.js';

/** Sum and count of the API server's own timing of its calls to a mutating webhook. */
export interface WebhookCallTotals {
  readonly sum: number;
  readonly count: number;
}

/**
 * `apiserver_admission_webhook_admission_duration_seconds` for CREATE admits of the named
 * webhook, read from the API server's /metrics: the API server's view of one call, from sending
 * the AdmissionReview to having applied the answer's patch.
 */
export async function webhookCallTotals(client: PodClient, webhookName: string): Promise<WebhookCallTotals> {
  const text = await client.getText('/metrics');
  let sum = 0;
  let count = 0;
  for (const line of text.split('\n')) {
    const m = /^apiserver_admission_webhook_admission_duration_seconds_(sum|count)\{([^}]*)\} (\S+)$/.exec(
      line,
    );
    if (!m) continue;
    const labels = m[2] ?? '';
    if (!labels.includes(`name="${webhookName}"`) || !labels.includes('operation="CREATE"')) continue;
    if (!labels.includes('type="admit"')) continue;
    if (m[1] === 'sum') sum += Number(m[3]);
    else count += Number(m[3]);
  }
  return { sum, count };
}

/** Mean milliseconds per call between two readings. */
export function meanCallMs(before: WebhookCallTotals, after: WebhookCallTotals): number {
  const n = after.count - before.count;
  return n > 0 ? ((after.sum - before.sum) / n) * 1000 : Number.NaN;
}
