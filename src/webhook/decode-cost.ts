/**
 * An upper bound of the memory decoding a JSON body takes: the body, its text and what
 * `JSON.parse` builds from it. What a body costs depends on its shape far more than on its size
 * (nested arrays or distinct short keys take many times what one string or a real Pod of the
 * same size takes; the figures are in docs/webhook-hardening.md). So the bytes that make
 * objects, arrays and members are counted, each at what V8 allocates for it at most on
 * adversarial shapes.
 */

/** Per body byte: the Buffer, the decoded text (two bytes a character at worst) and the strings parsed out of it. */
const PER_BYTE = 4;

/** An object or an array (`{`, `[`): its header, elements or properties store, and hidden class. */
const PER_CONTAINER = 64;

/** A member (`:`): a property slot, and with distinct keys a hidden-class transition of its own. */
const PER_MEMBER = 200;

/** An element or member separator (`,`): a slot (twice, as arrays grow by doubling), or a heap number. */
const PER_ELEMENT = 24;

/** A string: its header (the bytes inside are in {@link PER_BYTE}). */
const PER_STRING = 16;

/** Bodies up to this size are not scanned: they are charged at {@link SMALL_BODY_FACTOR} per byte. */
export const UNSCANNED_BYTES = 16 * 1024;

/** Above what the worst shape (nested arrays) takes per body byte, with room (docs/webhook-hardening.md). */
export const SMALL_BODY_FACTOR = 40;

const QUOTE = 0x22;
const BACKSLASH = 0x5c;

const WEIGHTS = new Uint8Array(256);
WEIGHTS[0x7b] = PER_CONTAINER; // {
WEIGHTS[0x5b] = PER_CONTAINER; // [
WEIGHTS[0x3a] = PER_MEMBER; // :
WEIGHTS[0x2c] = PER_ELEMENT; // ,

/** A string's first bytes are looked at one by one (keys are short); beyond, the end is searched natively. */
const SHORT_STRING = 32;

/**
 * The estimated cost, in bytes, of holding `body` decoded. A small body is charged its worst
 * case without looking (a few microseconds saved on every ordinary request). A larger one is
 * scanned once: structure outside strings is counted byte by byte; the inside of a long string is
 * skipped with a native search for its closing quote, so a body of mostly text (annotations, env
 * values) costs well under a nanosecond a byte. A body that is not JSON is only overestimated.
 */
export function decodeCost(body: Buffer): number {
  const n = body.length;
  if (n <= UNSCANNED_BYTES) return n * SMALL_BODY_FACTOR;
  // Native searches for escaped quotes are bounded, so that a string of `\"` cannot make the
  // scan slower than a byte loop by much; past the bound, strings are walked byte by byte.
  let searches = n >> 6;
  let structure = 0;
  let i = 0;
  while (i < n) {
    const c = body[i] as number;
    i++;
    if (c !== QUOTE) {
      structure += WEIGHTS[c] as number;
      continue;
    }
    structure += PER_STRING;
    // The string's first bytes, one by one.
    const short = Math.min(n, i + SHORT_STRING);
    while (i < short) {
      const s = body[i] as number;
      if (s === QUOTE) break;
      i += s === BACKSLASH ? 2 : 1;
    }
    if (i < short && body[i] === QUOTE) {
      i++;
      continue;
    }
    const end = endOfLongString(body, i, searches);
    searches -= end.searches;
    i = end.at === -1 ? endByBytes(body, i) : end.at;
  }
  return n * PER_BYTE + structure;
}

/**
 * The index just past the string's closing quote, found with at most `budget` native searches
 * (-1 when they did not suffice), and how many it took.
 */
function endOfLongString(body: Buffer, from: number, budget: number): { at: number; searches: number } {
  let searches = 0;
  let i = from;
  while (searches < budget) {
    searches++;
    const q = body.indexOf(QUOTE, i);
    if (q === -1) return { at: body.length, searches };
    let slashes = 0;
    while (q - slashes - 1 >= from && body[q - slashes - 1] === BACKSLASH) slashes++;
    if (slashes % 2 === 0) return { at: q + 1, searches };
    i = q + 1;
  }
  return { at: -1, searches };
}

/** The index just past the string's closing quote, walking byte by byte. */
function endByBytes(body: Buffer, from: number): number {
  let i = from;
  while (i < body.length) {
    const s = body[i] as number;
    if (s === QUOTE) return i + 1;
    i += s === BACKSLASH ? 2 : 1;
  }
  return body.length;
}
