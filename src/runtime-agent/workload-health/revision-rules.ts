/**
 * The registry rules (the config's `overrides`) of the revisions this webhook served, so the
 * follower can check a Pod's revision stamp against its set (DESIGN §14): a pull failure counts
 * only where the failing image is what that revision's overrides make of the original the Pod
 * names. Bounded to the newest few revisions; kept in the status ConfigMap beside the report, so a
 * webhook started under a new set (a new release) still knows the rules of the one before.
 */
import { createRegistryRewriter, type ImageRewriter } from '../../image/registry-rewrite.js';

/** The rewrite of a revision's rules; undefined for a revision not known (its Pods count no failure). */
export type RevisionRulesLookup = (revision: string) => ImageRewriter | undefined;

/** Revisions whose rules are kept. */
export const MAX_KNOWN_REVISIONS = 8;
/** The most of the kept text read back; more is not read at all. */
export const MAX_RULES_TEXT_CHARS = 256 * 1024;
/** Overrides of one revision read back at most. */
const MAX_OVERRIDES = 256;
const MAX_REVISION_CHARS = 128;
const MAX_OVERRIDE_CHARS = 512;

interface Known {
  readonly text: string;
  readonly rewrite: ImageRewriter | undefined;
}

function rewriterOf(overrides: Readonly<Record<string, string>>): ImageRewriter | undefined {
  try {
    return createRegistryRewriter(overrides);
  } catch {
    return undefined; // unusable overrides rewrite nothing we could check against
  }
}

/** Revision → its overrides, the newest {@link MAX_KNOWN_REVISIONS}. */
export class RevisionRules {
  private readonly known = new Map<string, Known>();

  /** The revision in force and its overrides (each poll): kept as the newest. */
  note(revision: string, overrides: Readonly<Record<string, string>>): void {
    if (revision === '' || revision.length > MAX_REVISION_CHARS) return;
    const text = JSON.stringify(overrides);
    const had = this.known.get(revision);
    this.known.delete(revision);
    this.known.set(revision, had?.text === text ? had : { text, rewrite: rewriterOf(overrides) });
    this.trim();
  }

  /** The rewrite of `revision`'s overrides, if known. */
  readonly lookup: RevisionRulesLookup = (revision) => this.known.get(revision)?.rewrite;

  /** The revisions known, oldest first. */
  revisions(): string[] {
    return [...this.known.keys()];
  }

  /** The rules as kept in the status ConfigMap: a JSON object of revision → overrides, oldest first. */
  toText(): string {
    const out: Record<string, unknown> = {};
    for (const [revision, k] of this.known) out[revision] = JSON.parse(k.text) as unknown;
    return JSON.stringify(out);
  }

  /**
   * Takes the rules a webhook kept before (its text from the status ConfigMap) as older than
   * those known here; anything malformed or over the bounds is left out.
   */
  takeOver(text: string | undefined): void {
    if (text === undefined || text.length > MAX_RULES_TEXT_CHARS) return;
    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch {
      return;
    }
    if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) return;
    const mine = [...this.known];
    this.known.clear();
    for (const [revision, value] of Object.entries(parsed as Record<string, unknown>).slice(
      -MAX_KNOWN_REVISIONS,
    )) {
      const overrides = overridesOf(value);
      if (overrides !== undefined && revision !== '' && revision.length <= MAX_REVISION_CHARS)
        this.known.set(revision, { text: JSON.stringify(overrides), rewrite: rewriterOf(overrides) });
    }
    for (const [revision, k] of mine) {
      this.known.delete(revision);
      this.known.set(revision, k);
    }
    this.trim();
  }

  private trim(): void {
    for (const revision of this.known.keys()) {
      if (this.known.size <= MAX_KNOWN_REVISIONS) break;
      this.known.delete(revision);
    }
  }
}

function overridesOf(value: unknown): Record<string, string> | undefined {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return undefined;
  const entries = Object.entries(value as Record<string, unknown>);
  if (entries.length > MAX_OVERRIDES) return undefined;
  const out: [string, string][] = [];
  for (const [key, target] of entries) {
    if (typeof target !== 'string' || key.length > MAX_OVERRIDE_CHARS || target.length > MAX_OVERRIDE_CHARS)
      return undefined;
    out.push([key, target]);
  }
  // fromEntries defines members, so a key `__proto__` stays a key.
  return Object.fromEntries(out);
}
