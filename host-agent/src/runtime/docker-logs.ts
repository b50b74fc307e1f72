/**
 * `container logs` through the Engine's logs API: both streams, with the engine's timestamps,
 * newest `tail` lines, optionally since a time. Containers run without a TTY, so the body is
 * multiplexed (an 8-byte header per frame: stream, 3 zero bytes, big-endian length).
 */
import type Dockerode from "dockerode";
import type { ContainerLogsParams, ContainerLogsResult } from "../../../protocol/tunnel-projects.js";
import { HostError } from "../projects/errors.js";
import { dockerStatusCode, errorMessage } from "./errors.js";
import { fitLines } from "./output-budget.js";

/** The container's recent output as lines (`<RFC 3339 time> <text>`). */
export async function dockerLogs(
  container: Dockerode.Container,
  params: ContainerLogsParams,
): Promise<ContainerLogsResult> {
  let body: unknown;
  try {
    body = await container.logs({
      follow: false,
      stdout: true,
      stderr: true,
      timestamps: true,
      tail: params.tail,
      ...(params.since !== undefined ? { since: params.since } : {}),
    });
  } catch (error) {
    if (dockerStatusCode(error) === 404)
      throw new HostError("not_found", "the project's container does not exist");
    throw new HostError("runtime_error", `the engine refused the logs: ${errorMessage(error)}`, {
      cause: error,
    });
  }
  const raw = Buffer.isBuffer(body) ? body : Buffer.from(String(body ?? ""));
  const lines = demuxLines(raw).slice(-params.tail);
  const fitted = fitLines(lines);
  return { lines: fitted.lines, truncated: fitted.cut };
}

/** Splits a multiplexed log body into its lines (stdout and stderr interleaved as written). */
export function demuxLines(raw: Buffer): string[] {
  const lines: string[] = [];
  const partial = { 1: "", 2: "" } as Record<number, string>;
  let offset = 0;
  while (offset + 8 <= raw.length) {
    const stream = raw[offset] ?? 1;
    const size = raw.readUInt32BE(offset + 4);
    const payload = raw.subarray(offset + 8, offset + 8 + size).toString("utf8");
    offset += 8 + size;
    const text = (partial[stream] ?? "") + payload;
    const parts = text.split("\n");
    partial[stream] = parts.pop() ?? "";
    lines.push(...parts);
  }
  for (const rest of Object.values(partial)) if (rest !== "") lines.push(rest);
  return lines;
}
