/**
 * A project's disk bound end to end: the Worker under wrangler dev, a Docker host-agent (root,
 * so each project's volume is a loop-mounted filesystem of its size), scripted droids. A droid of
 * a project bounded at 256 MiB tries to write 600 MiB into its workspace: the kernel stops it at
 * the bound, its session gets a `disk_limit` event and ends, a new session there is refused; a
 * second project on the same host keeps running; the first one's workspace stays readable.
 */
import { describe, expect, it } from "vitest";
import { dockerStack } from "./docker-stack.js";
import { runStep } from "./support.js";

const e2e = dockerStack();
const MIB = 1024 * 1024;

/** Writes up to `mb` MiB into `file`, 1 MiB at a time, and prints how far it got and why it stopped. */
const FILL = `
const fs = require("node:fs");
const [file, mb] = [process.argv[1], Number(process.argv[2])];
const chunk = Buffer.alloc(1024 * 1024, 7);
const fd = fs.openSync(file, "w");
let written = 0, error = null;
try { for (let i = 0; i < mb; i++) written += fs.writeSync(fd, chunk); }
catch (e) { error = e.code; }
try { fs.closeSync(fd); } catch {}
console.log(JSON.stringify({ written, error }));`;

async function project(limits: Record<string, unknown>): Promise<string> {
  const created = await e2e.caller.ok<{ project_id: string }>("project", {
    action: "create",
    name: `disk-${crypto.randomUUID().slice(0, 8)}`,
    limits,
  });
  return created.project_id;
}

async function spawn(projectId: string): Promise<string> {
  const { session_id } = await e2e.caller.ok<{ session_id: string }>("session", {
    action: "spawn",
    project_id: projectId,
    new_session: true,
  });
  await e2e.caller.waitForOutput(session_id, (d) => d.op === "ready", 60_000);
  return session_id;
}

describe("a project's disk bound", () => {
  it("stops a project at its bound with a disk_limit event; another project runs on; the workspace stays", async () => {
    const bounded = await project({ disk_mb: 256 });
    const other = await project({});
    const filler = await spawn(bounded);
    const bystander = await spawn(other);
    // Its bound is its own; the other's is the host's default; the host keeps them as filesystems.
    const info = (id: string) =>
      e2e.caller.ok<{ disk: Record<string, unknown> }>("project", { action: "get", project_id: id });
    expect((await info(bounded)).disk).toEqual({ limit_mb: 256, source: "project", mode: "filesystem" });
    expect((await info(other)).disk).toEqual({
      limit_mb: 10_240,
      source: "host_default",
      mode: "filesystem",
    });

    // The droid writes 600 MiB into its workspace (it is stopped on the way: no need to hear from it).
    const fill = {
      id: "fill",
      steps: [{ op: "exec", argv: ["node", "-e", FILL, "big.bin", "600"], timeout_ms: 120_000 }],
    };
    await e2e.caller.ok("session", { action: "message", session_id: filler, message: JSON.stringify(fill) });
    const limit = await e2e.caller.waitFor(
      (e) => e.session_id === filler && e.type === "disk_limit",
      120_000,
      "the disk_limit event",
    );
    expect(limit).toMatchObject({ limit_mb: 256, message: expect.stringContaining("disk bound") });
    expect((limit as { used_mb: number }).used_mb).toBeLessThanOrEqual(256 + 16);
    await e2e.caller.waitFor(
      (e) => e.session_id === filler && e.type === "session_ended" && e.reason.includes("disk_limit"),
      30_000,
      "the filler's end",
    );

    // While it is at its bound the project starts nothing new, and says why.
    const refused = await e2e.caller.call("session", {
      action: "spawn",
      project_id: bounded,
      new_session: true,
    });
    expect(refused.isError).toBe(true);
    expect(JSON.stringify(refused.content)).toContain("disk bound");

    // The other project's session goes on as if nothing happened.
    expect(await runStep(e2e.caller, bystander, { op: "fs", action: "whoami" })).toMatchObject({ ok: true });

    // The bounded project's workspace is still there to read (and clean up), and the kernel
    // stopped the file at the bound (the filesystem keeps a little for itself).
    const listed = await e2e.caller.ok<{ exit_code: number; stdout: string }>("container", {
      action: "exec",
      project_id: bounded,
      command: ["stat", "-c", "%s", "/workspace/default/big.bin"],
    });
    expect(listed.exit_code).toBe(0);
    const size = Number(listed.stdout.trim());
    expect(size).toBeLessThanOrEqual(256 * MIB);
    expect(size).toBeGreaterThan(200 * MIB);

    for (const id of [bounded, other])
      await e2e.caller.call("project", { action: "delete", project_id: id, force: true });
  }, 300_000);
});
