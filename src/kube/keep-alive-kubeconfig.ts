import { KubeConfig, type RequestContext } from '@kubernetes/client-node';
import type https from 'node:https';
import { KeepAliveAgents } from './keep-alive-agents.js';

type HttpsOptions = Parameters<KubeConfig['applyToHTTPSOptions']>[0];

/**
 * A KubeConfig whose requests reuse connections. client-node gives every call a new https
 * agent, hence a new TLS handshake (a drift repair opened 27 connections to one runtime); this
 * one swaps that agent for a keep-alive agent with the same TLS options, for the generated APIs
 * (`applySecurityAuthentication`) and for raw requests (`applyToHTTPSOptions`) alike.
 * `close()` lets the connections go when the client is dropped.
 */
export class KeepAliveKubeConfig extends KubeConfig {
  private readonly agents = new KeepAliveAgents();

  override async applySecurityAuthentication(context: RequestContext): Promise<void> {
    await super.applySecurityAuthentication(context);
    const agent = this.agents.replace(context.getAgent());
    if (agent !== undefined) context.setAgent(agent);
  }

  override async applyToHTTPSOptions(opts: HttpsOptions): Promise<void> {
    await super.applyToHTTPSOptions(opts);
    // The parameter's WebSocket half resolves to no type here; both halves carry `agent`.
    const withAgent = opts as { agent?: https.RequestOptions['agent'] };
    withAgent.agent = this.agents.replace(withAgent.agent);
  }

  /** Closes idle connections now and busy ones once their requests had time to end. */
  close(): void {
    this.agents.retireAll();
  }
}
