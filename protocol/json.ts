import { z } from "zod";

/** Any JSON value. Used where the product relays caller data it does not interpret. */
export type JsonValue = string | number | boolean | null | JsonValue[] | { [key: string]: JsonValue };

/**
 * Any JSON value. Everything this schema sees came out of `JSON.parse`, so it is JSON by
 * construction; the schema only types it, without walking (possibly large) relayed payloads.
 */
export const JsonValueSchema = z.custom<JsonValue>(() => true);

/** A JSON object (the shape of tool arguments). */
export const JsonObjectSchema = z.record(z.string(), JsonValueSchema);
export type JsonObject = z.infer<typeof JsonObjectSchema>;

/** Parses JSON text without throwing. */
export function tryParseJson(text: string): { ok: true; value: unknown } | { ok: false; error: string } {
  try {
    return { ok: true, value: JSON.parse(text) as unknown };
  } catch (err) {
    return { ok: false, error: err instanceof Error ? err.message : String(err) };
  }
}
