/**
 * Finding PEM blocks in text that may be hostile (a runtime's Secret, a caBundle, the KCP's trust
 * bundle) in time linear in its length: `indexOf` only, no regular expression. A lazy pattern such
 * as `/-----BEGIN X-----[\s\S]*?-----END X-----/g` retries from every BEGIN line when no END
 * follows, so text of many BEGIN lines costs the square of its length; here the search for an END
 * that is not there ends the scan. Every caller limits the text's size first
 * ({@link PEM_FIELD_MAX_BYTES}) and the number of blocks it parses ({@link PEM_FIELD_MAX_BLOCKS}).
 */

/**
 * The largest PEM field read (a Secret's `ca.crt`, `tls.crt`, `ca.key`, a caBundle, a trusted CA):
 * 256 KiB. Ours hold a few certificates of about 1 KB; the public web PKI's whole root bundle is
 * about 220 KB. Larger text is not parsed at all.
 */
export const PEM_FIELD_MAX_BYTES = 256 * 1024;

/** Blocks parsed in one field: ours hold at most four (two CAs during a rotation, and a takeover's). */
export const PEM_FIELD_MAX_BLOCKS = 64;

/** One block: its label and the text from its BEGIN line to the end of its END line. */
export interface PemBlock {
  readonly label: string;
  readonly text: string;
}

/** The blocks of one label in a text, and whether anything but whitespace lies outside them. */
export interface PemBlocks {
  readonly blocks: readonly PemBlock[];
  /** Text outside the blocks (or after a BEGIN line with no END line) that is not whitespace. */
  readonly outside: boolean;
  /** Scanning stopped at `maxBlocks`: what follows was not looked at. */
  readonly truncated: boolean;
}

const isBlank = (text: string, from: number, to: number): boolean => {
  for (let i = from; i < to; i++) {
    const c = text.charCodeAt(i);
    // space, \t, \n, \v, \f, \r
    if (c !== 32 && (c < 9 || c > 13)) return false;
  }
  return true;
};

/**
 * The blocks labelled `label` (e.g. `CERTIFICATE`), as the lazy pattern above finds them: from a
 * BEGIN line to the first END line of the label after it (a BEGIN line in between is part of the
 * block, which then does not parse). A BEGIN line with no END line after it ends the scan.
 */
export function findPemBlocks(text: string, label: string, maxBlocks = Infinity): PemBlocks {
  const begin = `-----BEGIN ${label}-----`;
  const end = `-----END ${label}-----`;
  const blocks: PemBlock[] = [];
  let outside = false;
  let at = 0;
  for (;;) {
    if (blocks.length >= maxBlocks) return { blocks, outside, truncated: true };
    const b = text.indexOf(begin, at);
    if (b < 0) break;
    const e = text.indexOf(end, b + begin.length);
    if (e < 0) break;
    if (!isBlank(text, at, b)) outside = true;
    blocks.push({ label, text: text.slice(b, e + end.length) });
    at = e + end.length;
  }
  if (!isBlank(text, at, text.length)) outside = true;
  return { blocks, outside, truncated: false };
}

/** What a strict scan found: the blocks of any label in order, or the first thing wrong. */
export type StrictPemScan =
  | { readonly ok: true; readonly blocks: readonly PemBlock[] }
  | { readonly ok: false; readonly problem: string };

const MARK = '-----';
const LABEL_MAX = 64;

/**
 * Every block of any label, strictly: each `-----BEGIN L-----` line must be followed by its
 * `-----END L-----` with nothing in between that looks like another boundary line. Text between
 * blocks without boundary lines (a bundle's comments) is allowed, as the API server allows it.
 * Problems name the block by its position (from 1), never its content.
 */
export function scanPemStrict(text: string, maxBlocks = Infinity): StrictPemScan {
  const blocks: PemBlock[] = [];
  let at = 0;
  for (;;) {
    const m = text.indexOf(MARK, at);
    if (m < 0) return { ok: true, blocks };
    const n = blocks.length + 1;
    if (!text.startsWith('BEGIN ', m + MARK.length)) {
      if (text.startsWith('END ', m + MARK.length))
        return { ok: false, problem: `an END line without BEGIN before block ${n}` };
      // Dashes that are no boundary line (a comment's rule): outside any block, as any text.
      at = m + MARK.length;
      continue;
    }
    if (blocks.length >= maxBlocks) return { ok: false, problem: `more than ${maxBlocks} PEM blocks` };
    const labelStart = m + MARK.length + 'BEGIN '.length;
    const labelEnd = text.indexOf(MARK, labelStart);
    if (
      labelEnd < 0 ||
      labelEnd - labelStart > LABEL_MAX ||
      /[^A-Z0-9 ]/.test(text.slice(labelStart, labelEnd))
    )
      return { ok: false, problem: `PEM block ${n} has a malformed BEGIN line` };
    const label = text.slice(labelStart, labelEnd);
    const bodyStart = labelEnd + MARK.length;
    // The next boundary of any kind must be this block's END line.
    const next = text.indexOf(MARK, bodyStart);
    const end = `${MARK}END ${label}${MARK}`;
    if (next < 0 || !text.startsWith(end, next))
      return { ok: false, problem: `PEM block ${n} (${label}) has no END line of its own` };
    blocks.push({ label, text: text.slice(m, next + end.length) });
    at = next + end.length;
  }
}

/**
 * The DER bytes of the first block labelled `label` (its body's base64, whitespace ignored), or
 * undefined when there is none or the text is over {@link PEM_FIELD_MAX_BYTES}.
 */
export function firstPemDer(text: string, label: string): Buffer | undefined {
  if (text.length > PEM_FIELD_MAX_BYTES) return undefined;
  const [block] = findPemBlocks(text, label, 1).blocks;
  if (block === undefined) return undefined;
  const body = block.text.slice(`-----BEGIN ${label}-----`.length, -`-----END ${label}-----`.length);
  return Buffer.from(body.replace(/\s+/g, ''), 'base64');
}
