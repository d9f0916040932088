/**
 * Rendezvous (highest random weight) hashing: a key belongs to the member with the highest
 * weight hash(member, key). Every replica computes the same owner from the same member set with
 * no coordination, the keys spread evenly, and a member joining or leaving moves only the keys
 * it wins or held (about 1/n of them), never keys between two other members. Pure.
 */

/**
 * A 53-bit hash of a string (cyrb53: two multiplicative 32-bit lanes, finalised together). Not
 * cryptographic: weights only need to be uniform and the same on every replica. Exact in a
 * double, so weights compare with `>`.
 */
export function hash53(text: string, seed = 0): number {
  let h1 = 0xdeadbeef ^ seed;
  let h2 = 0x41c6ce57 ^ seed;
  for (let i = 0; i < text.length; i++) {
    const ch = text.charCodeAt(i);
    h1 = Math.imul(h1 ^ ch, 2654435761);
    h2 = Math.imul(h2 ^ ch, 1597334677);
  }
  h1 = Math.imul(h1 ^ (h1 >>> 16), 2246822507);
  h1 ^= Math.imul(h2 ^ (h2 >>> 13), 3266489909);
  h2 = Math.imul(h2 ^ (h2 >>> 16), 2246822507);
  h2 ^= Math.imul(h1 ^ (h1 >>> 13), 3266489909);
  return 4294967296 * (2097151 & h2) + (h1 >>> 0);
}

/** The weight of `member` for `key`. */
export function rendezvousWeight(member: string, key: string): number {
  // The separator keeps ("ab", "c") and ("a", "bc") apart.
  return hash53(`${member}\u0000${key}`);
}

/**
 * The owner of `key` among `members` (the highest weight; equal weights go to the smaller
 * name, so the answer never depends on the order of `members`); undefined when there are none.
 */
export function rendezvousOwner(key: string, members: Iterable<string>): string | undefined {
  let best: string | undefined;
  let bestWeight = -1;
  for (const m of members) {
    const w = rendezvousWeight(m, key);
    if (w > bestWeight || (w === bestWeight && best !== undefined && m < best)) {
      best = m;
      bestWeight = w;
    }
  }
  return best;
}
