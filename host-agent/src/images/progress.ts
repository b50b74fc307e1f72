/**
 * Reads the JSON-lines progress stream the engine returns for build and import. Each line is
 * parsed with zod (an unparsable line is reported, not thrown from an event handler), `stream`
 * and `status` text goes to the log, and an `error`/`errorDetail` line becomes the result's error.
 */
import { createInterface } from "node:readline";
import { z } from "zod";

const ProgressEventSchema = z.looseObject({
  stream: z.string().optional(),
  status: z.string().optional(),
  error: z.string().optional(),
  errorDetail: z.looseObject({ message: z.string().optional() }).optional(),
  aux: z.looseObject({ ID: z.string().optional() }).optional(),
});

export interface ProgressResult {
  /** The engine's error message, when the operation failed. */
  error: string | null;
  /** Image id announced by the engine (`aux.ID` for builds, `status` for imports). */
  imageId: string | null;
}

/** Consumes a build/import progress stream to its end; never throws for engine-reported errors. */
export async function readProgress(
  stream: NodeJS.ReadableStream,
  log: (line: string) => void,
): Promise<ProgressResult> {
  const result: ProgressResult = { error: null, imageId: null };
  const lines = createInterface({ input: stream, crlfDelay: Number.POSITIVE_INFINITY });
  for await (const raw of lines) {
    if (raw.trim() === "") continue;
    const parsed = ProgressEventSchema.safeParse(safeJson(raw));
    if (!parsed.success) {
      log(`  (unparsed engine output) ${raw.slice(0, 200)}`);
      continue;
    }
    const event = parsed.data;
    if (event.error !== undefined || event.errorDetail?.message !== undefined) {
      result.error = event.errorDetail?.message ?? event.error ?? "unknown engine error";
      continue;
    }
    if (event.aux?.ID !== undefined) result.imageId = event.aux.ID;
    if (event.status?.startsWith("sha256:")) result.imageId = event.status;
    const text = (event.stream ?? event.status ?? "").trimEnd();
    if (text !== "") log(`  ${text}`);
  }
  return result;
}

function safeJson(raw: string): unknown {
  try {
    return JSON.parse(raw);
  } catch {
    return undefined;
  }
}
