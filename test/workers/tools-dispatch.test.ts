import { env } from "cloudflare:workers";
import { describe, expect, it, vi } from "vitest";
import { z } from "zod";
import type { CallerPrincipal } from "../../worker/src/auth/tokens.js";
import { AppError } from "../../worker/src/errors.js";
import type { Log } from "../../worker/src/log.js";
import { action, defineActionTool, defineTool } from "../../worker/src/tools/define.js";
import { type CallEnvironment, callTool, UnknownToolError } from "../../worker/src/tools/dispatch.js";
import { ToolRegistry } from "../../worker/src/tools/registry.js";

const ProjectId = z.string().regex(/^[a-z]+$/);

const widget = defineActionTool({
  name: "widget",
  title: "Widgets",
  description: "Test widgets.",
  actions: {
    get: action({
      description: "Read one.",
      access: "read",
      target: "project",
      timing: "sync",
      example: { project_id: "alpha", id: 1 },
      input: z.object({ project_id: ProjectId, id: z.number().int() }),
      handler: async (args) => ({ id: args.id, project: args.project_id }),
    }),
    make: action({
      description: "Make one.",
      access: "write",
      target: "project",
      timing: "sync",
      example: { project_id: "alpha", name: "w" },
      input: z.object({ project_id: ProjectId, name: z.string().min(1) }),
      handler: async (args) => {
        if (args.name === "taken") throw new AppError("conflict", "widget taken exists");
        if (args.name === "boom") throw new Error("database exploded: secret detail");
        return [args.name];
      },
    }),
    move: action({
      description: "Move one to another project.",
      access: "write",
      target: "project",
      timing: "sync",
      example: { project_id: "alpha", to: "beta" },
      input: z.object({ project_id: ProjectId, to: ProjectId }),
      handler: async (args, ctx) => {
        ctx.authorizeProject(args.to);
        return { moved: true };
      },
    }),
  },
});

const background = vi.fn(async () => ({ done: true }));
const kick = defineTool({
  name: "kick",
  title: "Kick",
  description: "Starts background work.",
  action: {
    description: "Kick.",
    access: "write",
    target: "global",
    example: {},
    timing: "fire_and_forget",
    input: z.object({}),
    handler: background,
  },
});

const registry = new ToolRegistry([widget, kick]);

function caller(...scopes: CallerPrincipal["scopes"]): CallerPrincipal {
  return { kind: "caller", tokenId: "t1", scopes };
}

function call(principal: CallerPrincipal, extra: Partial<CallEnvironment> = {}) {
  const log: Log = { debug() {}, info() {}, warn() {}, error: vi.fn(), child: () => log };
  const waitUntil = vi.fn<(p: Promise<unknown>) => void>();
  const environment: CallEnvironment = { env, principal, mcp: null, log, waitUntil, ...extra };
  return {
    run: (name: string, args: unknown) => callTool(registry, name, args, environment),
    log,
    waitUntil,
  };
}

describe("callTool", () => {
  it("throws UnknownToolError for a tool it does not have", async () => {
    await expect(call(caller("admin")).run("nope", {})).rejects.toBeInstanceOf(UnknownToolError);
  });

  it("returns a result with the value as JSON text and, for objects, structured content", async () => {
    const { run } = call(caller("admin"));
    const got = await run("widget", { action: "get", project_id: "alpha", id: 7 });
    expect(got).toEqual({
      content: [{ type: "text", text: '{"id":7,"project":"alpha"}' }],
      structuredContent: { id: 7, project: "alpha" },
    });
    const made = await run("widget", { action: "make", project_id: "alpha", name: "w" });
    expect(made).toEqual({ content: [{ type: "text", text: '["w"]' }] });
  });

  it("answers invalid arguments with isError naming each bad field", async () => {
    const got = await call(caller("admin")).run("widget", { action: "get", project_id: "ALPHA", id: "x" });
    expect(got.isError).toBe(true);
    expect(got.structuredContent).toMatchObject({ error: { code: "invalid_arguments" } });
    expect(got.content[0]?.text).toMatch(/project_id/);
    expect(got.content[0]?.text).toMatch(/\bid\b/);
  });

  it.each([
    ["admin", ["admin"], "make", true],
    ["admin:ro reading", ["admin:ro"], "get", true],
    ["admin:ro writing", ["admin:ro"], "make", false],
    ["its own project", ["project:alpha"], "make", true],
    ["another project", ["project:beta"], "make", false],
    ["its own project read-only, reading", ["project:alpha:ro"], "get", true],
    ["its own project read-only, writing", ["project:alpha:ro"], "make", false],
  ] as const)("checks the scope from the definition: %s", async (_, scopes, act, allowed) => {
    const args = act === "get" ? { id: 1 } : { name: "w" };
    const got = await call(caller(...scopes)).run("widget", { action: act, project_id: "alpha", ...args });
    expect(got.isError === true).toBe(!allowed);
    if (!allowed) expect(got.structuredContent).toMatchObject({ error: { code: "forbidden" } });
  });

  it("lets a handler check a second project with the same rule", async () => {
    const { run } = call(caller("project:alpha"));
    const got = await run("widget", { action: "move", project_id: "alpha", to: "beta" });
    expect(got).toMatchObject({ isError: true, structuredContent: { error: { code: "forbidden" } } });
    expect(got.content[0]?.text).toContain("beta");
  });

  it("turns an AppError into isError with its code and message", async () => {
    const got = await call(caller("admin")).run("widget", { action: "make", project_id: "a", name: "taken" });
    expect(got).toMatchObject({
      isError: true,
      structuredContent: { error: { code: "conflict", message: "widget taken exists" } },
    });
  });

  it("hides an unexpected error's details from the caller and logs it", async () => {
    const { run, log } = call(caller("admin"));
    const got = await run("widget", { action: "make", project_id: "a", name: "boom" });
    expect(got).toMatchObject({ isError: true, structuredContent: { error: { code: "internal" } } });
    expect(got.content[0]?.text).not.toContain("secret");
    expect(log.error).toHaveBeenCalledWith("tool failed", expect.objectContaining({ tool: "widget.make" }));
  });

  it("answers a fire-and-forget tool at once and hands the work to waitUntil", async () => {
    const { run, waitUntil } = call(caller("admin"));
    const got = await run("kick", {});
    expect(got.structuredContent).toEqual({ status: "accepted" });
    // The work, and then (a write being audited) the audit entry it leaves.
    await waitUntil.mock.calls[0]?.[0];
    expect(background).toHaveBeenCalledTimes(1);
    expect(waitUntil).toHaveBeenCalledTimes(2);
  });

  it("refuses a standalone tool's unknown arguments", async () => {
    const got = await call(caller("admin")).run("kick", { extra: 1 });
    expect(got.isError).toBe(true);
    expect(got.content[0]?.text).toContain("extra");
  });
});
