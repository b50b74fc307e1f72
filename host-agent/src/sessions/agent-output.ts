import type { Readable } from "node:stream";
import { tryParseJson } from "../../../protocol/json.js";
import { LineSplitter } from "../../../protocol/line-splitter.js";
import type { HostSessionEvent } from "../../../protocol/tunnel.js";

/** Longest stdout line turned into one event; longer lines are reported, not relayed. */
const MAX_OUTPUT_LINE_BYTES = 256 * 1024;
/** stderr lines are truncated to this many characters. */
const MAX_LOG_LINE_CHARS = 8 * 1024;

/**
 * Turns the agent's output into host events: each stdout line is a `droid_output` (parsed JSON in
 * `data`, anything else in `text`), each stderr line a `droid_log`. Both streams are always
 * read, so a chatty agent never blocks on a full pipe.
 */
export function readAgentOutput(
  stdout: Readable,
  stderr: Readable,
  emit: (event: HostSessionEvent) => void,
): void {
  const out = new LineSplitter(MAX_OUTPUT_LINE_BYTES);
  const onOut = (events: ReturnType<LineSplitter["push"]>) => {
    for (const e of events) {
      if (e.kind === "oversized") {
        emit({
          type: "droid_log",
          text: `[oubliette] dropped a ${e.bytes}-byte stdout line (limit ${MAX_OUTPUT_LINE_BYTES})`,
        });
        continue;
      }
      const json = tryParseJson(e.text);
      emit(
        json.ok
          ? { type: "droid_output", data: json.value as never }
          : { type: "droid_output", text: e.text },
      );
    }
  };
  stdout.on("data", (chunk: Buffer) => onOut(out.push(chunk)));
  stdout.on("end", () => onOut(out.end()));

  const err = new LineSplitter(MAX_OUTPUT_LINE_BYTES);
  const onErr = (events: ReturnType<LineSplitter["push"]>) => {
    for (const e of events) {
      const text = e.kind === "line" ? e.text : `[oubliette] dropped a ${e.bytes}-byte stderr line`;
      emit({
        type: "droid_log",
        text: text.length > MAX_LOG_LINE_CHARS ? `${text.slice(0, MAX_LOG_LINE_CHARS)}…` : text,
      });
    }
  };
  stderr.on("data", (chunk: Buffer) => onErr(err.push(chunk)));
  stderr.on("end", () => onErr(err.end()));
}
