/**
 * Nested sessions end to end: the Worker under wrangler dev, a Docker host-agent, scripted droids
 * holding keys. A droid starts a child through `oubliette_session spawn`; the child's events
 * appear in the parent's merged events (`include_children`, each naming its session); the child,
 * at the project's max_recursion_depth, is refused a grandchild; ending the parent ends the child.
 */
import { describe, expect, it } from "vitest";
import { dockerStack } from "./docker-stack.js";
import { runStep, text } from "./support.js";

const e2e = dockerStack();

interface MergedPage {
  events: { session_id: string; type: string; data?: { op?: string } }[];
  children_next_index: Record<string, number>;
}

async function statusOf(sessionId: string): Promise<string> {
  return (await e2e.caller.ok<{ status: string }>("session", { action: "get", session_id: sessionId }))
    .status;
}

async function eventually(what: string, check: () => Promise<boolean>, timeoutMs = 20_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (await check()) return;
    await new Promise((r) => setTimeout(r, 250));
  }
  throw new Error(`timed out waiting until ${what}`);
}

/** The first droid output line of `sessionId` matching `match`, read by polling its events. */
async function outputOf(
  sessionId: string,
  match: (data: Record<string, unknown>) => boolean,
): Promise<Record<string, unknown>> {
  let found: Record<string, unknown> | undefined;
  await eventually(
    `a matching output of ${sessionId}`,
    async () => {
      const page = await e2e.caller.ok<{ events: { type: string; data?: Record<string, unknown> }[] }>(
        "session",
        {
          action: "events",
          session_id: sessionId,
          limit: 1000,
        },
      );
      found = page.events.find((e) => e.type === "droid_output" && e.data && match(e.data))?.data;
      return found !== undefined;
    },
    60_000,
  );
  return found ?? {};
}

describe("nested sessions", () => {
  it("a droid's child shows in its merged events, is refused depth past the limit, and ends with it", async () => {
    const { project_id: projectId } = await e2e.caller.ok<{ project_id: string }>("project", {
      action: "create",
      name: `nested-${crypto.randomUUID().slice(0, 8)}`,
      limits: { max_recursion_depth: 1 },
    });
    const { session_id: parentId } = await e2e.caller.ok<{ session_id: string }>("session", {
      action: "spawn",
      project_id: projectId,
      oubliette_access: "project",
    });
    await e2e.caller.waitForOutput(parentId, (d) => d.op === "ready", 60_000);
    await runStep(e2e.caller, parentId, { op: "wait_tool", name: "oubliette_session", timeout_ms: 20_000 });

    // The parent starts a child, which gets a key of its own.
    const spawned = await runStep(e2e.caller, parentId, {
      op: "call",
      name: "oubliette_session",
      arguments: { action: "spawn", project_id: projectId, oubliette_access: "project" },
    });
    expect(spawned.is_error).toBe(false);
    const child = JSON.parse(text(spawned)) as {
      session_id: string;
      depth: number;
      parent_session_id: string;
    };
    expect(child).toMatchObject({ depth: 1, parent_session_id: parentId });

    // The parent's merged events hold the child's, each naming its session.
    let merged: MergedPage = { events: [], children_next_index: {} };
    await eventually("the child's ready output is in the parent's merged events", async () => {
      merged = await e2e.caller.ok<MergedPage>("session", {
        action: "events",
        session_id: parentId,
        include_children: true,
      });
      return merged.events.some((e) => e.session_id === child.session_id && e.data?.op === "ready");
    });
    expect(merged.events.some((e) => e.session_id === parentId && e.type === "session_started")).toBe(true);
    expect(merged.children_next_index[child.session_id]).toBeGreaterThan(0);

    // The child is at depth 1, the project's limit: it may not start a grandchild. (The caller
    // did not spawn the child, so it follows it by reading its events.)
    await e2e.caller.ok("session", {
      action: "message",
      session_id: child.session_id,
      message: JSON.stringify({
        id: "grandchild",
        steps: [
          { op: "wait_tool", name: "oubliette_session", timeout_ms: 20_000 },
          {
            op: "call",
            id: "grandchild",
            name: "oubliette_session",
            arguments: { action: "spawn", project_id: projectId },
          },
        ],
      }),
    });
    const refused = await outputOf(child.session_id, (d) => d.op === "call" && d.id === "grandchild");
    expect(refused.is_error).toBe(true);
    expect(text(refused)).toContain("max_recursion_depth 1 reached");
    expect(text(refused)).toContain("limit_exceeded");

    // Ending the parent ends the child.
    await e2e.caller.ok("session", { action: "end", session_id: parentId });
    await eventually("the child has ended", async () => (await statusOf(child.session_id)) === "ended");
    await e2e.caller.call("project", { action: "delete", project_id: projectId, force: true });
  }, 180_000);
});
