/**
 * What a failed agents test prints beside its assertion: what the fake model was asked (when,
 * whether the request offered tools, which, and what it asked of them), and the session's events
 * in order. A real CLI that stalls under load says little by itself; this says where it stopped.
 */
import type { SessionEvent } from "../../protocol/events.js";
import { ADAPTERS } from "../fixtures/fake-model/routes.js";
import type { RecordedRequest } from "../fixtures/fake-model/types.js";

/** The tools a model request offered, as the fake model read them (`namespace.name`). */
export function offeredTools(request: RecordedRequest): string[] {
  if (request.protocol === null) return [];
  const described = ADAPTERS[request.protocol].describe(request.body, new URL(request.path, "http://model"));
  if (!described.ok) return [`(unreadable: ${described.error})`];
  return described.request.tools.map((t) => (t.namespace ? `${t.namespace}.${t.name}` : t.name));
}

/** One line per request of a lane, times relative to the first. */
export function describeRequests(requests: readonly RecordedRequest[]): string[] {
  const start = requests[0]?.at ?? 0;
  return requests.map((r) => {
    const tools = offeredTools(r);
    const shown = tools.length > 8 ? [...tools.slice(0, 8), `… ${tools.length - 8} more`] : tools;
    return `  +${((r.at - start) / 1000).toFixed(1)} s ${r.method} ${r.path} main=${r.main} tools=[${shown.join(", ")}]`;
  });
}

/** One line per event of a session: its type and what says most about it. */
export function describeEvents(events: readonly SessionEvent[]): string[] {
  return events.map((e) => {
    const detail = JSON.stringify(e).slice(0, 200);
    return `  ${e.type} ${detail}`;
  });
}

/** The whole report for a session and its model lane. */
export function failureReport(
  label: string,
  requests: readonly RecordedRequest[],
  events: readonly SessionEvent[],
): string {
  return [
    `── ${label}: what the fake model was asked (${requests.length}) ──`,
    ...describeRequests(requests),
    `── ${label}: the session's events (${events.length}) ──`,
    ...describeEvents(events),
  ].join("\n");
}
