/**
 * Periodic `notifications/progress` for a tool call that is waiting on the caller, so droid-side
 * clients that reset their request timeout on progress keep waiting as long as we do.
 */
import type { ProgressToken, ServerNotification } from "@modelcontextprotocol/sdk/types.js";
import type { Logger } from "../../../lib/log.js";

/** Starts sending progress every `intervalMs`; returns the function that stops it. */
export function startProgressHeartbeat(
  send: (notification: ServerNotification) => Promise<void>,
  progressToken: ProgressToken,
  intervalMs: number,
  logger: Logger,
): () => void {
  const startedAt = Date.now();
  let progress = 0;
  const timer = setInterval(() => {
    progress += 1;
    const waited = Math.round((Date.now() - startedAt) / 1000);
    send({
      method: "notifications/progress",
      params: { progressToken, progress, message: `waiting for the caller (${waited} s)` },
    }).catch((err: unknown) => logger.debug({ err }, "progress notification failed"));
  }, intervalMs);
  return () => clearInterval(timer);
}
