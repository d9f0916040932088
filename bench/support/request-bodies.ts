// The request body a load generator sends, and with a marker, each request's own copy of it.
import { readFileSync } from 'node:fs';

/** The body as read, and where it holds `marker`, a maker of copies with a fresh number in its place. */
export interface RequestBodies {
  readonly body: Buffer;
  /** The next copy, the marker replaced by a counter padded to its length; undefined without a marker. */
  readonly unique: (() => string) | undefined;
}

/** Reads `bodyFile`; with `marker`, which it must contain, each request can get a body of its own. */
export function requestBodies(bodyFile: string, marker: string | undefined): RequestBodies {
  const body = readFileSync(bodyFile);
  if (marker === undefined) return { body, unique: undefined };
  const parts = body.toString('utf8').split(marker);
  if (parts.length < 2) throw new Error(`the body does not contain ${marker}`);
  let next = 0;
  return { body, unique: () => parts.join(String(next++).padStart(marker.length, '0')) };
}
