/**
 * An upper bound of the memory decoding a JSON body takes: the body, its text and what
 * `JSON.parse` builds from it. What a body costs depends on its shape far more than on its size:
 * 3.9 MB of nested empty arrays take 110 MB of heap, of distinct short keys 84 MB, of one string
 * 4 MB, while the largest Pod etcd stores (3.5 MB of JSON) takes 9 MB (Node 20, measured; see
 * docs/webhook-hardening.md). So the bytes that make objects, arrays and members are counted,
 * each at what V8 allocates for it at most, measured on adversarial shapes.
 */

/** Per body byte: the Buffer, the decoded text (two bytes a character at worst) and the strings parsed out of it. */
const PER_BYTE = 4;

/** An object or an array (`{`, `[`): its header, elements or properties store, and hidden class. */
const PER_CONTAINER = 64;

/** A member (`:`): a property slot, and with distinct keys a hidden-class transition of its own (~200 bytes measured). */
const PER_MEMBER = 200;

/** An element or member separator (`,`): a slot, or a heap number. */
const PER_ELEMENT = 16;

/** A quote (`"`): half the header of a string. */
const PER_QUOTE = 8;

/** Bodies up to this size are not scanned: they are charged at {@link SMALL_BODY_FACTOR} per byte. */
export const UNSCANNED_BYTES = 16 * 1024;

/** The worst measured shape (nested arrays) takes 29 bytes of heap per body byte; rounded up. */
export const SMALL_BODY_FACTOR = 40;

const WEIGHTS = new Uint8Array(256);
WEIGHTS[0x7b] = PER_CONTAINER; // {
WEIGHTS[0x5b] = PER_CONTAINER; // [
WEIGHTS[0x3a] = PER_MEMBER; // :
WEIGHTS[0x2c] = PER_ELEMENT; // ,
WEIGHTS[0x22] = PER_QUOTE; // "

/**
 * The estimated cost, in bytes, of holding `body` decoded. Bytes inside strings are counted as
 * if they were structure, which only overestimates. A small body is charged its worst case
 * without looking (a few microseconds saved on every ordinary request); a larger one is scanned
 * once (about 4 ns a byte).
 */
export function decodeCost(body: Uint8Array): number {
  if (body.length <= UNSCANNED_BYTES) return body.length * SMALL_BODY_FACTOR;
  let structure = 0;
  for (let i = 0; i < body.length; i++) structure += WEIGHTS[body[i] ?? 0] ?? 0;
  return body.length * PER_BYTE + structure;
}
