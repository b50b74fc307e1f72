import type { z } from "zod";
import { AppError } from "../errors.js";

/**
 * How one kind of record is stored: the version written now, the schema every read passes, and
 * how data of an older version becomes the current shape. Version 0 is a record written before
 * records carried a version (bare JSON); later ones are `{"v": n, "data": …}`.
 */
export interface RecordFormat<S extends z.ZodType> {
  kind: string;
  version: number;
  schema: S;
  /** Turns data of version `from` (< `version`) into the current shape; absent: nothing changed. */
  migrate?(data: unknown, from: number): unknown;
}

/** A record as stored text, with its version. */
export function encodeRecord<S extends z.ZodType>(format: RecordFormat<S>, value: z.input<S>): string {
  return JSON.stringify({ v: format.version, data: value });
}

/**
 * A stored record read back: its version's envelope opened, migrated when older, and parsed with
 * the schema. A record that does not parse, or is newer than this code, is an internal error
 * naming the kind — never a cast that lets a wrong shape in.
 */
export function decodeRecord<S extends z.ZodType>(format: RecordFormat<S>, text: string): z.output<S> {
  const json = parseJson(format.kind, text);
  const { v, data } = isEnvelope(json) ? json : { v: 0, data: json };
  if (v > format.version) {
    throw new AppError(
      "internal",
      `a stored ${format.kind} record is version ${v}; this code reads up to ${format.version}`,
    );
  }
  const current = v < format.version && format.migrate ? format.migrate(data, v) : data;
  const parsed = format.schema.safeParse(current);
  if (!parsed.success) {
    const where = parsed.error.issues[0]?.path.join(".") ?? "";
    throw new AppError(
      "internal",
      `a stored ${format.kind} record (version ${v}) does not parse at '${where}'`,
    );
  }
  return parsed.data;
}

/** JSON text read back; text that is not JSON (a torn or foreign write) is the same internal error. */
function parseJson(kind: string, text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    throw new AppError("internal", `a stored ${kind} record is not JSON`);
  }
}

function isEnvelope(value: unknown): value is { v: number; data: unknown } {
  if (typeof value !== "object" || value === null || Array.isArray(value)) return false;
  const keys = Object.keys(value);
  return keys.length === 2 && "data" in value && Number.isInteger((value as { v?: unknown }).v);
}

/**
 * True when a schema's output and the type the code works with are the same shape; a stored
 * format declares `const same: SameShape<z.output<typeof Schema>, Record> = true`, so a change to
 * either without the other fails to compile.
 */
export type SameShape<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;
