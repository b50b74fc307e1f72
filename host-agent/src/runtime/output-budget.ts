/**
 * Bounds on what a command's output may put in one tunnel answer: a byte cap the caller chose
 * (both streams together), then the frame budget, which JSON escapes can make tighter still.
 */
import { jsonBytes } from "../../../protocol/json.js";
import { Limits, MAX_ENVELOPE_BYTES } from "../../../protocol/limits.js";

/** The most an answer's JSON may take: a frame less the largest envelope. */
export const ANSWER_BUDGET_BYTES = Limits.frameBytes - MAX_ENVELOPE_BYTES;

/** Collects stdout and stderr up to `limit` bytes together; what comes after is counted, not kept. */
export class OutputCollector {
  readonly #limit: number;
  readonly #chunks = { stdout: [] as Buffer[], stderr: [] as Buffer[] };
  #kept = 0;
  #truncated = false;

  constructor(limit: number) {
    this.#limit = limit;
  }

  get truncated(): boolean {
    return this.#truncated;
  }

  push(stream: "stdout" | "stderr", chunk: Buffer): void {
    const room = this.#limit - this.#kept;
    if (room <= 0) {
      if (chunk.length > 0) this.#truncated = true;
      return;
    }
    const kept = chunk.length > room ? chunk.subarray(0, room) : chunk;
    if (kept.length < chunk.length) this.#truncated = true;
    this.#chunks[stream].push(kept);
    this.#kept += kept.length;
  }

  text(stream: "stdout" | "stderr"): string {
    return Buffer.concat(this.#chunks[stream]).toString("utf8");
  }
}

/**
 * Cuts the two texts until `build(stdout, stderr)` encodes within the answer budget (the longer
 * one halves each round; at most 40 rounds). Returns the answer and whether anything was cut.
 */
export function fitOutput<T>(
  stdout: string,
  stderr: string,
  build: (stdout: string, stderr: string) => T,
): { answer: T; cut: boolean } {
  let out = stdout;
  let err = stderr;
  let cut = false;
  for (let round = 0; round < 40; round += 1) {
    const answer = build(out, err);
    if (jsonBytes(answer) <= ANSWER_BUDGET_BYTES) return { answer, cut };
    cut = true;
    if (out.length >= err.length) out = out.slice(0, Math.floor(out.length / 2));
    else err = err.slice(0, Math.floor(err.length / 2));
  }
  return { answer: build("", ""), cut: true };
}

/** Keeps the newest lines whose JSON fits the answer budget; true in `cut` when older ones went. */
export function fitLines(lines: string[]): { lines: string[]; cut: boolean } {
  let bytes = 64;
  let from = lines.length;
  while (from > 0) {
    const size = jsonBytes(lines[from - 1]) + 1;
    if (bytes + size > ANSWER_BUDGET_BYTES) break;
    bytes += size;
    from -= 1;
  }
  return { lines: lines.slice(from), cut: from > 0 };
}
