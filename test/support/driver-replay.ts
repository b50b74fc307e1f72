/**
 * Replays a recorded agent stream through a driver: every line the CLI printed goes to `read`, and
 * every line the recorder wrote is produced by the driver instead (user turns through `send`,
 * interrupts through `interrupt`, classified by `kindOf`), so a test checks both directions.
 */
import type { AgentDriver, DriverContext } from "../../container-client/src/agents/driver.js";
import type { AgentEventBody } from "../../protocol/agent-events.js";
import type { SampleEntry } from "./agent-samples.js";

export interface Replay {
  events: AgentEventBody[];
  /** Lines the driver wrote, in order, with the recorded line each stands for (null: the driver's own). */
  written: { line: string; recorded: string | null }[];
}

export type SentKind = { kind: "message"; text: string } | { kind: "interrupt" } | { kind: "handshake" };

export function replay(
  driver: AgentDriver,
  sample: SampleEntry[],
  kindOf: (sent: string) => SentKind,
): Replay {
  const events: AgentEventBody[] = [];
  const written: Replay["written"] = driver.start().map((line) => ({ line, recorded: null }));
  let seq = 0;
  for (const entry of sample) {
    if ("line" in entry) {
      const out = driver.read(entry.line);
      events.push(...out.events);
      written.push(...out.write.map((line) => ({ line, recorded: null })));
      continue;
    }
    const sent = kindOf(entry.sent);
    const lines =
      sent.kind === "message"
        ? driver.send(++seq, sent.text)
        : sent.kind === "interrupt"
          ? driver.interrupt()
          : [];
    written.push(...lines.map((line) => ({ line, recorded: entry.sent })));
  }
  return { events, written };
}

/** A driver context with recognisable values (for checking the launch). */
export function testContext(overrides: Partial<DriverContext> = {}): DriverContext {
  return {
    runtime: "claude",
    sessionId: "ses_0123456789abcdef01234567",
    cwd: "/workspace/default",
    home: "/tmp/oubliette-agents/ses_0123456789abcdef01234567",
    model: "claude-sonnet-4-5",
    modelBaseUrl: "http://127.0.0.1:45678",
    modelToken: "oubm_placeholder_0123456789",
    command: ["/opt/agents/claude/claude"],
    mcpServer: {
      name: "oubliette",
      command: "/usr/bin/node",
      args: ["/opt/oubliette/container-client.mjs"],
      env: { OUBLIETTE_SESSION_TOKEN: "secret-of-the-session", OUBLIETTE_SOCKET: "/mcp/relay.sock" },
    },
    ...overrides,
  };
}

export function ofType<T extends AgentEventBody["type"]>(events: AgentEventBody[], type: T) {
  return events.filter((e): e is Extract<AgentEventBody, { type: T }> => e.type === type);
}
