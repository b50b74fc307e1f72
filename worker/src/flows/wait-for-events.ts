import type { Result } from "../errors.js";
import { isLive, type SessionStatus } from "../session/session-record.js";
import type { EventsPage } from "../session/types.js";
import type { McpOrigin } from "./context.js";

/** How often a wait reports progress when no MCP session asks (a call from outside MCP). */
const DEFAULT_SLICE_MS = 5_000;

/**
 * `session events` with `wait_seconds`: reads until an event from `since` on exists, the session
 * ends, or the time is up. The session object is asked in slices of one keep-alive period, and
 * between slices the client hears progress (`notifications/progress`, or a comment on an SSE
 * answer); a client found gone ends the wait, so no reader outlives its client by more than a
 * slice.
 */
export async function waitForEvents(
  read: (waitMs: number) => Promise<Result<EventsPage>>,
  options: { since: number; waitSeconds: number; mcp: McpOrigin | null },
): Promise<Result<EventsPage>> {
  const { since, waitSeconds, mcp } = options;
  const started = Date.now();
  const until = started + waitSeconds * 1000;
  const sliceMs = mcp?.progressEveryMs ?? DEFAULT_SLICE_MS;
  for (;;) {
    const page = await read(Math.max(0, Math.min(until - Date.now(), sliceMs)));
    const done =
      !page.ok ||
      page.value.events.length > 0 ||
      !isLive(page.value.status as SessionStatus) ||
      Date.now() >= until;
    if (done) return page;
    const waited = (Date.now() - started) / 1000;
    const message = `waiting for events from index ${since} (${Math.round(waited)} of ${waitSeconds} s)`;
    if (mcp && !mcp.progress({ progress: waited, total: waitSeconds, message })) return page;
  }
}
