/** A JSON object as parsed JSON gives it: not null, not an array. */
export type JsonObject = Record<string, unknown>;

/** Whether `v` is a JSON object (not null, not an array). */
export const isJsonObject = (v: unknown): v is JsonObject =>
  typeof v === 'object' && v !== null && !Array.isArray(v);

/** `v` when it is a JSON object, else undefined. */
export const asJsonObject = (v: unknown): JsonObject | undefined => (isJsonObject(v) ? v : undefined);
