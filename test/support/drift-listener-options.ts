/**
 * Direct mode's drift channel with its listener on loopback, as the tests and the benchmarks' controller
 * process run it.
 */
import type { DirectModeOptions } from '../../src/controller/direct/direct-mode-options.js';
import type { DriftEndpointOptions } from '../../src/controller/direct/drift-endpoint.js';

/** The drift listener on a loopback port, beyond host, port and addresses (which it picks). */
export interface DriftListenerRequest extends Omit<DriftEndpointOptions, 'host' | 'port' | 'ipAddresses'> {
  /** The URL runtimes are told (default the listener's own): replicas of one KCP share one. */
  readonly listenerUrl?: string;
}

/** Direct mode's drift settings for a listener on 127.0.0.1:`port`: the channel on, the listener here. */
export function driftListenerOptions(
  port: number,
  request: DriftListenerRequest = {},
): Pick<DirectModeOptions, 'drift' | 'driftListener'> {
  const { listenerUrl, ...listener } = request;
  return {
    drift: { listenerUrl: listenerUrl ?? `https://127.0.0.1:${port}` },
    driftListener: { ...listener, host: '127.0.0.1', port, ipAddresses: ['127.0.0.1'] },
  };
}
