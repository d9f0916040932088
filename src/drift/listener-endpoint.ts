import { trimEndChar } from '../text/trim-char.js';

/** Why a listener URL is unusable, and the parser's error if it did not parse. */
export interface UnusableListenerUrl {
  readonly message: string;
  readonly cause?: unknown;
}

/**
 * The URL of one route of the KCP's drift listener, from the listener URL a runtime is given
 * (`https://host:port`, optionally with a path prefix): what the forwarder and the attestor post to.
 */
export function listenerEndpoint(listenerUrl: string, route: string): URL | UnusableListenerUrl {
  let base: URL;
  try {
    base = new URL(listenerUrl);
  } catch (cause) {
    return { message: 'the listener URL does not parse', cause };
  }
  if (base.protocol !== 'https:') return { message: `the listener URL must be https: ${base.origin}` };
  return new URL(base.origin + trimEndChar(base.pathname, '/') + route);
}
