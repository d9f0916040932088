/**
 * One field of each item, in order: what a test compares when only the names (keys, runtimes) of a
 * list matter, on one line.
 */
export const pluck = <T, K extends keyof T>(items: readonly T[], key: K): T[K][] => items.map((i) => i[key]);
