/**
 * Structured logging for the Node programs: one JSON object per line, secrets redacted.
 * The container-client logs to stderr (its stdout is the droid's MCP channel).
 */
import { type Logger, pino } from "pino";

export type { Logger };

/** Field paths that may hold secrets; pino replaces them with "[redacted]". */
const REDACT_PATHS = [
  "token",
  "*.token",
  "session_token",
  "*.session_token",
  "host_token",
  "*.host_token",
  "hostToken",
  "*.hostToken",
  "sessionToken",
  "*.sessionToken",
  "runner_token",
  "*.runner_token",
  "runnerToken",
  "*.runnerToken",
  "api_key",
  "*.api_key",
  "authorization",
  "*.authorization",
  "headers.authorization",
];

export interface LogOptions {
  /** Component name, written as `name` on every line. */
  name: string;
  level?: string;
  /** File descriptor to write to: 1 (stdout, default) or 2 (stderr). */
  fd?: 1 | 2;
}

/** Creates a JSON-lines logger with secret redaction. */
export function createLogger(options: LogOptions): Logger {
  return pino(
    {
      name: options.name,
      level: options.level ?? process.env.OUBLIETTE_LOG_LEVEL ?? "info",
      redact: { paths: REDACT_PATHS, censor: "[redacted]" },
      base: { pid: process.pid },
      timestamp: pino.stdTimeFunctions.isoTime,
      formatters: { level: (label) => ({ level: label }) },
    },
    pino.destination({ fd: options.fd ?? 1, sync: true }),
  );
}
