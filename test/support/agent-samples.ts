/**
 * Recorded agent CLI streams (test/fixtures/agent-samples/): each line is `{"t":ms,"sent":line}`
 * (written to the CLI), `{"t":ms,"line":line}` (printed by it), or a note of the recorder.
 */
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";

export type SampleEntry = { t: number; sent: string } | { t: number; line: string };

export function loadSample(name: string): SampleEntry[] {
  const path = fileURLToPath(new URL(`../fixtures/agent-samples/${name}`, import.meta.url));
  return readFileSync(path, "utf8")
    .split("\n")
    .filter((l) => l.trim() !== "")
    .map((l) => JSON.parse(l) as Record<string, unknown>)
    .filter((e): e is SampleEntry => typeof e.sent === "string" || typeof e.line === "string");
}
