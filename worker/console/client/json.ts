/**
 * Narrowing of JSON the server sends. Every answer is `unknown` until one of these says what it
 * is: the console never casts a wire value.
 */
export type JsonRecord = Record<string, unknown>;

export function isRecord(value: unknown): value is JsonRecord {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** The string at `key`, or null when it is absent or not a string. */
export function str(record: JsonRecord, key: string): string | null {
  const value = record[key];
  return typeof value === "string" ? value : null;
}

/** The finite number at `key`, or null. */
export function num(record: JsonRecord, key: string): number | null {
  const value = record[key];
  return typeof value === "number" && Number.isFinite(value) ? value : null;
}

/** The boolean at `key`, or null. */
export function bool(record: JsonRecord, key: string): boolean | null {
  const value = record[key];
  return typeof value === "boolean" ? value : null;
}

/** The object at `key`, or null. */
export function rec(record: JsonRecord, key: string): JsonRecord | null {
  const value = record[key];
  return isRecord(value) ? value : null;
}

/** The array at `key` (empty when absent or not an array). */
export function arr(record: JsonRecord, key: string): unknown[] {
  const value = record[key];
  return Array.isArray(value) ? value : [];
}

/** The objects of the array at `key`, each passed through `parse`; entries it rejects are dropped. */
export function list<T>(record: JsonRecord, key: string, parse: (item: JsonRecord) => T | null): T[] {
  const out: T[] = [];
  for (const item of arr(record, key)) {
    if (!isRecord(item)) continue;
    const parsed = parse(item);
    if (parsed !== null) out.push(parsed);
  }
  return out;
}

/** The strings of the array at `key`. */
export function strings(record: JsonRecord, key: string): string[] {
  return arr(record, key).filter((item): item is string => typeof item === "string");
}

/** Compact JSON for one line of text (never throws: a cycle cannot come from JSON.parse). */
export function compact(value: unknown): string {
  return JSON.stringify(value) ?? String(value);
}

/** Indented JSON for a `<pre>`. */
export function pretty(value: unknown): string {
  return JSON.stringify(value, null, 2) ?? String(value);
}
