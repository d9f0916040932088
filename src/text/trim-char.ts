/**
 * Trimming one character off a string's ends by index, where a regex (`/\/+$/`) would start a
 * scan at every character of a long run and take quadratic time (DESIGN §14).
 */

/** `text` without the run of `char` (one character) at its end: `trimEndChar('a//', '/')` is `a`. */
export function trimEndChar(text: string, char: string): string {
  let end = text.length;
  while (end > 0 && text[end - 1] === char) end--;
  return text.slice(0, end);
}

/** `text` without the runs of `char` (one character) at both ends. */
export function trimChar(text: string, char: string): string {
  let start = 0;
  while (start < text.length && text[start] === char) start++;
  return trimEndChar(text.slice(start), char);
}
