/**
 * The revision in force (DESIGN §11): the set version the objects of the set on this runtime make
 * up (../api/set-version.ts `runtimeSetVersion`), not an annotation on the ConfigMap alone, so
 * that a change of only the pull Secret or only the bundle (one write, no ConfigMap write) moves
 * it too. Recomputed whenever the ConfigMap or another part changes; the holder takes it with the
 * ConfigMap's text (the same text again only moves its revision) and the report is told.
 */
import { runtimeSetVersion, UNWRITTEN_BUNDLE_ANNOTATION } from '../api/set-version.js';
import type { ConfigHolder, ConfigOffer } from './config-holder.js';

/** What the webhook knows of one object of the set: its content version once its watch has listed. */
export type SetPart =
  | { readonly known: false }
  | {
      readonly known: true;
      /** The object's content version; undefined: the object is missing or carries none. */
      readonly version: string | undefined;
    };

/** A part whose watch has not listed yet (or is switching to another name). */
export const UNKNOWN_PART: SetPart = { known: false };

/** The parts of the set besides the ConfigMap, as the configuration in force names them. */
export interface SetParts {
  readonly pullSecret: SetPart;
  readonly trustBundle: SetPart;
}

/** The config ConfigMap as last read. */
export interface ConfigMapRead {
  readonly text: string;
  /** Where the text came from, for logs. */
  readonly source: string;
  readonly annotations: Readonly<Record<string, string>> | undefined;
}

/**
 * Keeps the holder's revision at the set version of the latest ConfigMap and the parts. While a
 * part it counts is not known yet, the revision is undefined and nothing is reported: a version
 * made of a part not read yet names no set of the KCP's.
 */
export class SetRevision {
  private latest: ConfigMapRead | undefined;
  private offeredUnder: string | undefined;

  constructor(
    private readonly holder: ConfigHolder,
    /** Reads the other parts of the set (their watches, which follow the holder). */
    private readonly parts: () => SetParts,
    /** Told the version of each offer and its outcome (the status report). */
    private readonly onOffer?: (version: string | undefined, offer: ConfigOffer) => void,
  ) {}

  /** The ConfigMap was read: its text is offered under the set version it makes up now. */
  configMap(read: ConfigMapRead): ConfigOffer {
    this.latest = read;
    return this.offer(read);
  }

  /** A part may have changed: the latest text is offered again if the set version moved. */
  recompute(): void {
    const latest = this.latest;
    if (latest === undefined || this.versionOf(latest) === this.offeredUnder) return;
    this.offer(latest);
  }

  /** The set version in force; undefined for a ConfigMap not of the KCP's, or a counted part unknown. */
  private versionOf(read: ConfigMapRead): string | undefined {
    const { pullSecret, trustBundle } = this.parts();
    // The unwritten-bundle annotation stands for the bundle: no bundle object is counted then.
    const bundleCounts = read.annotations?.[UNWRITTEN_BUNDLE_ANNOTATION] === undefined;
    const version = runtimeSetVersion({
      configMap: read.annotations,
      pullSecret: pullSecret.known ? pullSecret.version : undefined,
      trustBundle: trustBundle.known ? trustBundle.version : undefined,
    });
    if (!pullSecret.known || (bundleCounts && !trustBundle.known)) return undefined;
    return version;
  }

  private offer(read: ConfigMapRead): ConfigOffer {
    const version = this.versionOf(read);
    const offer = this.holder.offer(read.text, read.source, version);
    // A text taken may name another Secret or bundle than the version counted: its revision waits
    // for that one (a refused text changes nothing, so this only retakes the same text).
    const settled = this.versionOf(read);
    if (settled !== version) this.holder.offer(read.text, read.source, settled);
    this.offeredUnder = settled;
    this.onOffer?.(settled, offer);
    return offer;
  }
}
