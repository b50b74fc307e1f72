/**
 * An agent CLI's stdout line can be far longer than one output event: Claude Code asks permission
 * to write a large file in one `control_request` line, and waits for the answer. The runner reads
 * such a line whole (up to Limits.agentLineBytes) so the question is put, clipped to the approval
 * request's bounds, and answered; a longer line is dropped with a log event saying so. A real
 * child process writing real pipes, read by the runner's AgentProcess and the Claude adapter.
 */
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { claudeDriver } from "../../container-client/src/agents/claude.js";
import type { PermissionAsk } from "../../container-client/src/agents/driver.js";
import { AgentProcess } from "../../container-client/src/runner/agent-process.js";
import { createLogger } from "../../lib/log.js";
import type { AgentEventBody } from "../../protocol/agent-events.js";
import { Limits } from "../../protocol/limits.js";
import { launchContext } from "../support/agent-streams.js";

const scratch = mkdtempSync(join(tmpdir(), "agent-long-lines-"));
const processes: AgentProcess[] = [];

afterEach(async () => {
  for (const agent of processes.splice(0)) await agent.stop(1000);
});

/**
 * A stand-in CLI: writes one `can_use_tool` question to write `bytes` characters into big.txt,
 * then copies each line it reads on stdin to `answers`.
 */
function cli(bytes: number, answers: string): string[] {
  const program = `
    const fs = require("node:fs");
    const question = { type: "control_request", request_id: "q1", request: { subtype: "can_use_tool",
      tool_name: "Write", input: { file_path: "big.txt", content: "y".repeat(${bytes}) }, tool_use_id: "toolu_1" } };
    process.stdout.write(JSON.stringify(question) + "\\n");
    let input = "";
    process.stdin.on("data", (c) => { input += c; fs.writeFileSync(${JSON.stringify(answers)}, input); });`;
  return [process.execPath, "-e", program];
}

async function run(bytes: number) {
  const answers = join(scratch, `answers-${bytes}.txt`);
  const events: AgentEventBody[] = [];
  const asks: PermissionAsk[] = [];
  const driver = claudeDriver(launchContext({ runtime: "claude", cwd: scratch, approvals: "ask" }));
  const agent = await AgentProcess.start({
    argv: cli(bytes, answers),
    driver,
    env: {},
    cwd: scratch,
    logger: createLogger({ name: "test", level: "silent" }),
    onEvent: (event) => events.push(event),
    onAsks: (asked) => asks.push(...asked),
  });
  processes.push(agent);
  return { agent, events, asks, answers };
}

async function until(check: () => boolean, what: string, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

describe("an agent's long stdout lines", () => {
  it("a 2 MiB permission question is put (its change clipped) and its answer reaches the CLI", async () => {
    const { agent, asks, answers } = await run(2 * 1024 * 1024);
    await until(() => asks.length === 1, "the question");
    const request = asks[0]?.request;
    expect(request).toMatchObject({ kind: "edit" });
    expect(request?.path).toContain("big.txt");
    expect((request?.diff ?? "").length).toBeLessThanOrEqual(65_536);
    expect(request?.diff).toContain("yyyy");
    const lines =
      asks[0]?.answer({ decision: "deny", scope: "once", by: "answer", message: "too big" }) ?? [];
    expect(lines).toHaveLength(1);
    expect(await agent.answer(lines)).toBe(true);
    await until(() => {
      try {
        return readFileSync(answers, "utf8").includes('"request_id":"q1"');
      } catch {
        return false;
      }
    }, "the answer on the CLI's stdin");
    const answer = JSON.parse(readFileSync(answers, "utf8").trim()) as Record<string, unknown>;
    expect(JSON.stringify(answer)).toContain("deny");
  });

  it("a line past the limit is dropped, with a log event naming its size and the limit", async () => {
    const { events, asks } = await run(Limits.agentLineBytes + 1024);
    await until(() => events.some((e) => e.type === "droid_log"), "the drop's log event");
    const log = events.find((e) => e.type === "droid_log") as { text: string };
    expect(log.text).toMatch(/dropped a \d+-byte stdout line/);
    expect(log.text).toContain(`limit ${Limits.agentLineBytes} bytes`);
    expect(asks).toEqual([]);
  });
});

process.on("exit", () => rmSync(scratch, { recursive: true, force: true }));
