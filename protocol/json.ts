import { z } from "zod";

/** Any JSON value. Used where the product relays caller data it does not interpret. */
export type JsonValue = string | number | boolean | null | JsonValue[] | { [key: string]: JsonValue };

/**
 * Any JSON value. Everything this schema sees came out of `parseJson`, so it is JSON by
 * construction (and no deeper than the depth limit); the schema only types it, without walking
 * (possibly large) relayed payloads.
 */
export const JsonValueSchema = z.custom<JsonValue>(() => true);

/** A JSON object (the shape of tool arguments). */
export const JsonObjectSchema = z.record(z.string(), JsonValueSchema);
export type JsonObject = z.infer<typeof JsonObjectSchema>;

/**
 * A JSON object again, spelt with interfaces: Durable Object RPC stub types can name it in a
 * return value, where the type alias recursion above is too deep for them.
 */
export interface JsonMap {
  [key: string]: JsonNode;
}
export interface JsonList extends Array<JsonNode> {}
export type JsonNode = string | number | boolean | null | JsonList | JsonMap;

/** Deepest nesting of arrays and objects accepted in any JSON the product parses. */
export const MAX_JSON_DEPTH = 64;

const OPEN_BRACE = 0x7b;
const OPEN_BRACKET = 0x5b;
const CLOSE_BRACE = 0x7d;
const CLOSE_BRACKET = 0x5d;
const QUOTE = 0x22;
const BACKSLASH = 0x5c;

/**
 * Whether JSON text nests arrays/objects deeper than `limit`. A linear scan without recursion,
 * so it cannot overflow the stack on the input it exists to refuse (100,000 `[` in a row).
 */
export function jsonDepthExceeds(text: string, limit: number): boolean {
  let depth = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === BACKSLASH) i++;
      else if (c === QUOTE) inString = false;
    } else if (c === QUOTE) inString = true;
    else if (c === OPEN_BRACE || c === OPEN_BRACKET) {
      depth++;
      if (depth > limit) return true;
    } else if (c === CLOSE_BRACE || c === CLOSE_BRACKET) depth--;
  }
  return false;
}

export type ParsedJson =
  | { ok: true; value: unknown }
  | { ok: false; reason: "invalid" | "too_deep"; error: string };

/** Parses JSON text without throwing; refuses nesting deeper than `maxDepth` with a clear error. */
export function parseJson(text: string, maxDepth = MAX_JSON_DEPTH): ParsedJson {
  if (jsonDepthExceeds(text, maxDepth)) {
    return { ok: false, reason: "too_deep", error: `JSON nested deeper than ${maxDepth} levels` };
  }
  try {
    return { ok: true, value: JSON.parse(text) as unknown };
  } catch (err) {
    return { ok: false, reason: "invalid", error: err instanceof Error ? err.message : String(err) };
  }
}

/**
 * UTF-8 length of a string, counted without encoding it. Lone surrogates count 3 bytes, as
 * TextEncoder writes them (as U+FFFD).
 */
export function utf8Length(text: string): number {
  let bytes = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c < 0x80) bytes += 1;
    else if (c < 0x800) bytes += 2;
    else if (c >= 0xd800 && c <= 0xdbff && i + 1 < text.length) {
      const next = text.charCodeAt(i + 1);
      if (next >= 0xdc00 && next <= 0xdfff) {
        bytes += 4;
        i++;
      } else bytes += 3;
    } else bytes += 3;
  }
  return bytes;
}

/** Whether `text` is more than `maxBytes` bytes of UTF-8; counts only when length cannot decide. */
export function exceedsUtf8Bytes(text: string, maxBytes: number): boolean {
  if (text.length > maxBytes) return true;
  if (text.length * 3 <= maxBytes) return false;
  return utf8Length(text) > maxBytes;
}

/** Size of a value once JSON-encoded, in UTF-8 bytes (what it costs on every wire). */
export function jsonBytes(value: unknown): number {
  return utf8Length(JSON.stringify(value) ?? "");
}
