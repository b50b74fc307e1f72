/**
 * Recorded agent CLI sessions (test/fixtures/agent-samples: each line `{"t","sent"}` for a line
 * written to the CLI, `{"t","line"}` for one it printed, plus the recorder's own notes) and a
 * replay that drives an adapter through one: each printed line goes to `read`, and wherever the
 * recording wrote a line, the adapter must have written one of the same shape by then.
 */
import { readFileSync } from "node:fs";
import { expect } from "vitest";
import type { AgentDriver, DriverContext } from "../../container-client/src/agents/driver.js";
import type { AgentEventBody } from "../../protocol/agent-events.js";

const STREAMS = new URL("../fixtures/agent-samples/", import.meta.url);

export type StreamEntry = { sent: string } | { line: string };

export function loadStream(name: string): StreamEntry[] {
  const entries: StreamEntry[] = [];
  for (const text of readFileSync(new URL(name, STREAMS), "utf8").split("\n")) {
    if (text.trim() === "") continue;
    const entry = JSON.parse(text) as { sent?: string; line?: string };
    if (entry.sent !== undefined) entries.push({ sent: entry.sent });
    else if (entry.line !== undefined) entries.push({ line: entry.line });
  }
  return entries;
}

/** The printed lines of a recording. */
export function printedLines(entries: StreamEntry[]): string[] {
  return entries.flatMap((entry) => ("line" in entry ? [entry.line] : []));
}

/** A JSON-RPC line as an object with its `id` (ours or the agent's numbering) made comparable. */
export function shape(line: string): unknown {
  const value = JSON.parse(line) as Record<string, unknown>;
  return "id" in value ? { ...value, id: "<id>" } : value;
}

export interface Replay {
  events: AgentEventBody[];
  /** What the adapter wrote that the recording did not (should be nothing). */
  extra: string[];
}

/**
 * Drives `driver` through a recording. `messages` are sent before the handshake even starts (the
 * adapter must hold them and send each when the recording did); a recorded line whose method is
 * `interruptMethod` is the cue to call `interrupt()`. `normalise` may blank fields the recorder
 * filled in differently (its client name). A recorded line `held` names may be written later than
 * the recording wrote it (the adapter waits for something the recorder did not), still in order.
 */
export function replay(
  driver: AgentDriver,
  entries: StreamEntry[],
  options: {
    messages: string[];
    interruptMethod: string;
    normalise?: (value: unknown) => unknown;
    held?: (sent: string) => boolean;
  },
): Replay {
  const normalise = options.normalise ?? ((value: unknown) => value);
  const held = options.held ?? (() => false);
  const written = [...driver.start()];
  options.messages.forEach((text, i) => {
    expect(driver.send(i + 1, text), "a message sent before the handshake waits").toEqual([]);
  });
  const events: AgentEventBody[] = [];
  /** Recorded lines not yet matched by one the driver wrote. */
  const expected: string[] = [];
  const match = () => {
    while (expected.length > 0) {
      const sent = expected[0] as string;
      const line = written.shift();
      if (line === undefined) {
        expect(held(sent), `the adapter should have written ${sent}`).toBe(true);
        return;
      }
      expected.shift();
      expect(normalise(shape(line))).toEqual(normalise(shape(sent)));
    }
  };
  for (const entry of entries) {
    if ("line" in entry) {
      const out = driver.read(entry.line);
      events.push(...out.events);
      written.push(...out.write);
      match();
      continue;
    }
    if ((JSON.parse(entry.sent) as { method?: string }).method === options.interruptMethod) {
      written.push(...driver.interrupt());
    }
    expected.push(entry.sent);
    match();
  }
  expect(expected, "recorded lines the adapter held and never wrote").toEqual([]);
  return { events, extra: written };
}

export type SentKind = { kind: "message"; text: string } | { kind: "interrupt" } | { kind: "handshake" };

/**
 * Drives `driver` through a recording the other way round: wherever the recording wrote a line,
 * the driver is asked for it (`kindOf` says whether it was a user turn, an interrupt or part of
 * the handshake) and both are returned side by side; for adapters whose user turns go out at once.
 */
export function replayOnCue(
  driver: AgentDriver,
  entries: StreamEntry[],
  kindOf: (sent: string) => SentKind,
): { events: AgentEventBody[]; written: { line: string; recorded: string | null }[] } {
  const events: AgentEventBody[] = [];
  const written = driver.start().map((line) => ({ line, recorded: null as string | null }));
  let seq = 0;
  for (const entry of entries) {
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

/** A driver's context as the runner makes it, with the recording's workspace and MCP server. */
export function testContext(overrides: Partial<DriverContext>): DriverContext {
  return {
    runtime: "scripted",
    sessionId: "ses_test",
    cwd: "/workspace/default",
    home: "/home/agents/ses_test",
    model: "fake-model",
    modelBaseUrl: "http://127.0.0.1:43210",
    modelToken: "oub_model_placeholder_0001",
    command: ["/opt/agents/cli"],
    mcpServer: {
      name: "oubliette",
      command: "/usr/local/bin/node",
      args: ["/opt/oubliette/container-client.js"],
      env: { OUBLIETTE_SOCKET: "/mcp/oubliette.sock", OUBLIETTE_SESSION_ID: "ses_test" },
    },
    ...overrides,
  };
}

/** Every event of one type, without the `type`. */
export function eventsOf<T extends AgentEventBody["type"]>(
  events: AgentEventBody[],
  type: T,
): Omit<Extract<AgentEventBody, { type: T }>, "type">[] {
  return events
    .filter((event): event is Extract<AgentEventBody, { type: T }> => event.type === type)
    .map(({ type: _type, ...rest }) => rest);
}

/** The text streamed in each turn (the deltas between completions). */
export function deltasPerTurn(events: AgentEventBody[]): string[] {
  const turns = [""];
  for (const event of events) {
    if (event.type === "delta") turns[turns.length - 1] += event.text;
    if (event.type === "completion") turns.push("");
  }
  return turns.slice(0, -1);
}

/** Lines the adapter wrote, as objects. */
export function parsed(lines: string[]): Record<string, unknown>[] {
  return lines.map((line) => JSON.parse(line) as Record<string, unknown>);
}

/** The types of the events, leaving out the stream of deltas and the system notes. */
export function eventOrder(events: AgentEventBody[]): string[] {
  return events.filter((e) => e.type !== "delta" && e.type !== "system").map((e) => e.type);
}

/** Every event of one type, as it is. */
export function ofType<T extends AgentEventBody["type"]>(events: AgentEventBody[], type: T) {
  return events.filter((e): e is Extract<AgentEventBody, { type: T }> => e.type === type);
}

/** A context with recognisable values (a Claude Code one unless overridden), to check a launch against. */
export function launchContext(overrides: Partial<DriverContext> = {}): DriverContext {
  return testContext({
    runtime: "claude",
    sessionId: "ses_0123456789abcdef01234567",
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
  });
}
