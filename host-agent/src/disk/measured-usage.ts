/**
 * A directory's disk use as `du` counts it (bytes of blocks allocated, this filesystem only):
 * the measure where a project's volume is a plain directory on the host's disk.
 */
import { stat } from "node:fs/promises";
import { runTool, ToolError } from "./run-tool.js";

/** Bytes used under `dir` (0 when it does not exist). */
export async function measuredBytes(dir: string, timeoutMs = 60_000): Promise<number> {
  if ((await stat(dir).catch(() => null)) === null) return 0;
  let out: string;
  try {
    out = await runTool("du", ["-s", "-x", "-B1", "--", dir], timeoutMs);
  } catch (error) {
    // A file removed while du walks makes it exit 1; the total it printed still counts.
    if (!(error instanceof ToolError) || error.stdout.trim() === "") throw error;
    out = error.stdout;
  }
  const bytes = Number(out.trim().split(/\s+/)[0]);
  if (!Number.isFinite(bytes)) throw new Error(`du printed no total for ${dir}`);
  return bytes;
}
