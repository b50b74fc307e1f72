import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { InMemoryTransport } from "@modelcontextprotocol/sdk/inMemory.js";
import { ToolListChangedNotificationSchema } from "@modelcontextprotocol/sdk/types.js";
import { afterEach, describe, expect, it } from "vitest";
import { DroidMcpServer } from "../../container-client/src/mcp/droid-mcp-server.js";
import { FirstListing } from "../../container-client/src/mcp/first-listing.js";
import { RelayCallError } from "../../container-client/src/socket/relay-errors.js";
import type { CallOptions } from "../../container-client/src/socket/relay-link.js";
import { CallerToolRegistry } from "../../container-client/src/tools/caller-tool-registry.js";
import { createLogger } from "../../lib/log.js";
import type { CallerToolsConfig } from "../../protocol/caller-tools.js";
import type { JsonObject, JsonValue } from "../../protocol/json.js";

const logger = createLogger({ name: "mcp-test", level: process.env.TEST_LOG_LEVEL ?? "silent", fd: 2 });

const config: CallerToolsConfig = {
  caller_id: "ant",
  tools: [{ name: "slow", description: "takes a while" }],
  timeout_ms: 1_000,
  backstop_ms: 76_000,
};

type CallerTool = (tool: string, args: JsonObject, options: CallOptions) => Promise<JsonValue>;

const open: Array<{ close(): Promise<void> }> = [];
afterEach(async () => {
  for (const c of open.splice(0)) await c.close();
});

async function setup(callerTool: CallerTool, progressIntervalMs = 10_000) {
  const registry = new CallerToolRegistry();
  const server = new DroidMcpServer({
    link: { callerTool },
    registry,
    logger,
    version: "test",
    progressIntervalMs,
  });
  const client = new Client({ name: "droid", version: "0" });
  let listChanged = 0;
  client.setNotificationHandler(ToolListChangedNotificationSchema, () => {
    listChanged += 1;
  });
  const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
  await server.connect(serverSide, () => {});
  // Before the droid initializes, a config change must not throw or send anything.
  registry.replace(config);
  server.toolsChanged();
  await client.connect(clientSide);
  open.push(client, server);
  return { registry, server, client, listChanged: () => listChanged };
}

describe("DroidMcpServer", () => {
  it("waits up to the config's backstop and keeps the droid waiting with progress", async () => {
    let seen: CallOptions | undefined;
    const { client } = await setup(async (_tool, args, options) => {
      seen = options;
      await new Promise((r) => setTimeout(r, 400));
      return { got: args };
    }, 50);
    let progress = 0;
    const result = await client.callTool({ name: "ant_slow", arguments: { a: 1 } }, undefined, {
      // Far shorter than the call: only the progress heartbeat keeps it alive.
      timeout: 150,
      resetTimeoutOnProgress: true,
      onprogress: () => {
        progress += 1;
      },
    });
    expect(result.content).toEqual([{ type: "text", text: '{"got":{"a":1}}' }]);
    expect(progress).toBeGreaterThanOrEqual(3);
    expect(seen?.backstopMs).toBe(config.backstop_ms);
  });

  it("sends list_changed after initialization when the set changes", async () => {
    const { registry, server, client, listChanged } = await setup(async () => null);
    expect(listChanged()).toBe(0);
    expect((await client.listTools()).tools.map((t) => t.name)).toEqual(["ant_slow"]);
    expect(registry.replace({ ...config, tools: [{ name: "other" }] })).toBe(true);
    server.toolsChanged();
    for (let i = 0; i < 50 && listChanged() === 0; i++) await new Promise((r) => setTimeout(r, 10));
    expect(listChanged()).toBe(1);
    expect((await client.listTools()).tools.map((t) => t.name)).toEqual(["ant_other"]);
    expect(registry.replace({ ...config, tools: [{ name: "other" }] })).toBe(false);
  });

  it("passes the droid's cancellation to the relay", async () => {
    let aborted = false;
    let started: () => void = () => {};
    const sawStart = new Promise<void>((r) => (started = r));
    const { client } = await setup(
      (_tool, _args, options) =>
        new Promise((_, reject) => {
          started();
          options.signal?.addEventListener("abort", () => {
            aborted = true;
            reject(new RelayCallError("cancelled", "the call was cancelled"));
          });
        }),
    );
    const controller = new AbortController();
    const call = client.callTool({ name: "ant_slow", arguments: {} }, undefined, {
      signal: controller.signal,
    });
    await sawStart;
    controller.abort("the droid gave up");
    await expect(call).rejects.toThrow();
    await expect.poll(() => aborted).toBe(true);
  });

  it("turns relay failures into tool errors with a readable message", async () => {
    const { client } = await setup(async () => {
      throw new RelayCallError("timeout", "no answer from the host-agent within 135 s");
    });
    const result = await client.callTool({ name: "ant_slow", arguments: {} });
    expect(result).toMatchObject({
      isError: true,
      content: [{ type: "text", text: "no answer from the host-agent within 135 s" }],
    });
    const unknown = await client.callTool({ name: "ant_missing", arguments: {} });
    expect(unknown).toMatchObject({
      isError: true,
      content: [{ type: "text", text: "unknown tool: ant_missing" }],
    });
  });

  it("exposes no tools for a config without caller_id", async () => {
    const { registry, client } = await setup(async () => null);
    registry.replace({ ...config, caller_id: null });
    expect((await client.listTools()).tools).toEqual([]);
  });
});

describe("the agent's first tool list", () => {
  async function connected(listing: FirstListing, timeoutMs = 5_000) {
    const registry = new CallerToolRegistry();
    const server = new DroidMcpServer({
      link: { callerTool: async () => ({}) },
      registry,
      logger,
      version: "test",
      firstListing: listing,
      firstListingTimeoutMs: timeoutMs,
    });
    const client = new Client({ name: "droid", version: "0" });
    const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
    await server.connect(serverSide, () => {});
    await client.connect(clientSide);
    open.push(client, server);
    return { registry, client };
  }

  it("waits until every source of tools has spoken, so a CLI that lists once sees them all", async () => {
    const listing = new FirstListing(["caller_tools", "oubliette_tools"]);
    const { registry, client } = await connected(listing);
    let answered = false;
    const first = client.listTools().then((r) => {
      answered = true;
      return r;
    });
    await new Promise((r) => setTimeout(r, 100));
    expect(answered).toBe(false);
    registry.replace(config);
    listing.settle("caller_tools");
    await new Promise((r) => setTimeout(r, 50));
    expect(answered).toBe(false);
    listing.settle("oubliette_tools");
    expect((await first).tools.map((t) => t.name)).toEqual(["ant_slow"]);
    // Later lists answer at once.
    expect((await client.listTools()).tools).toHaveLength(1);
  });

  it("answers with what it has once its bound passes, when a source never speaks", async () => {
    const listing = new FirstListing(["caller_tools"]);
    const { client } = await connected(listing, 200);
    const started = Date.now();
    expect((await client.listTools()).tools).toEqual([]);
    expect(Date.now() - started).toBeGreaterThanOrEqual(180);
  });

  it("serves every schema in the part of JSON Schema every model API takes", async () => {
    const listing = new FirstListing([]);
    const { registry, client } = await connected(listing);
    registry.replace({
      ...config,
      tools: [
        {
          name: "typed",
          inputSchema: {
            $schema: "https://json-schema.org/draft/2020-12/schema",
            type: "object",
            properties: { id: { type: "string", pattern: "^x" }, n: { type: ["integer", "null"] } },
            additionalProperties: false,
          },
        },
      ],
    });
    const [tool] = (await client.listTools()).tools;
    expect(tool?.inputSchema).toEqual({
      type: "object",
      properties: { id: { type: "string" }, n: { type: "integer" } },
      additionalProperties: false,
    });
  });
});
