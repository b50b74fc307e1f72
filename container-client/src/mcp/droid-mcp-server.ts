/**
 * The MCP server the droid talks to over stdio: lists the caller's tools and relays calls to
 * the host-agent. Built on the SDK's low-level `Server` because the tool set is replaced whole
 * at run time, with schemas the caller wrote in JSON Schema.
 */
import { Server } from "@modelcontextprotocol/sdk/server/index.js";
import type { Transport } from "@modelcontextprotocol/sdk/shared/transport.js";
import {
  type CallToolRequest,
  CallToolRequestSchema,
  type CallToolResult,
  ListToolsRequestSchema,
  type ServerNotification,
} from "@modelcontextprotocol/sdk/types.js";
import type { Logger } from "../../../lib/log.js";
import { type JsonObject, JsonObjectSchema } from "../../../protocol/json.js";
import { portableSchema } from "../../../protocol/portable-schema.js";
import type { RelayLink } from "../socket/relay-link.js";
import { failureResult, toCallToolResult, toolErrorResult } from "../tools/call-result.js";
import type { CallerToolRegistry } from "../tools/caller-tool-registry.js";
import type { OublietteToolRegistry } from "../tools/oubliette-tool-registry.js";
import type { FirstListing } from "./first-listing.js";
import { startProgressHeartbeat } from "./progress-heartbeat.js";

export const SERVER_NAME = "oubliette-container-client";

export interface DroidMcpServerOptions {
  link: Pick<RelayLink, "callerTool">;
  registry: CallerToolRegistry;
  /** Oubliette's own tools, when the droid holds an API key. */
  oubliette?: {
    registry: OublietteToolRegistry;
    call(tool: string, args: JsonObject, signal: AbortSignal): Promise<CallToolResult>;
  };
  logger: Logger;
  version: string;
  progressIntervalMs?: number;
  /** The first tools/list waits for every source of tools (bounded); absent: it answers at once. */
  firstListing?: FirstListing;
  /** How long the first tools/list waits at most; default 15 s. */
  firstListingTimeoutMs?: number;
}

interface CallExtra {
  signal: AbortSignal;
  sendNotification(notification: ServerNotification): Promise<void>;
}

export class DroidMcpServer {
  readonly #server: Server;
  readonly #options: DroidMcpServerOptions;
  readonly #log: Logger;
  #initialized = false;
  /** The first tools/list has been answered. */
  #listed = false;

  constructor(options: DroidMcpServerOptions) {
    this.#options = options;
    this.#log = options.logger.child({ component: "mcp" });
    this.#server = new Server(
      { name: SERVER_NAME, version: options.version },
      { capabilities: { tools: { listChanged: true } } },
    );
    this.#server.oninitialized = () => {
      this.#initialized = true;
      this.#log.info({ client: this.#server.getClientVersion() }, "droid connected");
    };
    this.#server.onerror = (err) => this.#log.warn({ err: err.message }, "MCP error");
    this.#server.setRequestHandler(ListToolsRequestSchema, async () => {
      await this.#firstListing();
      const tools = [...options.registry.list(), ...(options.oubliette?.registry.list() ?? [])];
      // Every runtime's model API must take every schema: they are served in the portable subset.
      return { tools: tools.map((tool) => ({ ...tool, inputSchema: portableSchema(tool.inputSchema) })) };
    });
    this.#server.setRequestHandler(CallToolRequestSchema, (request, extra) => this.#callTool(request, extra));
  }

  /** Waits (once, bounded) until the agent's first tool list can be complete. */
  async #firstListing(): Promise<void> {
    const listing = this.#options.firstListing;
    if (!listing || this.#listed) return;
    const missing = await listing.wait(this.#options.firstListingTimeoutMs ?? 15_000);
    this.#listed = true;
    if (missing.length > 0)
      this.#log.warn({ missing }, "answering the first tools/list without every source of tools");
  }

  /** Serves the droid over `transport`; `onClose` runs when the droid goes away. */
  async connect(transport: Transport, onClose: () => void): Promise<void> {
    this.#server.onclose = onClose;
    await this.#server.connect(transport);
  }

  /** Tells the droid its tool list changed; skipped until it has initialized (it lists tools then). */
  toolsChanged(): void {
    if (!this.#initialized) return;
    this.#server
      .sendToolListChanged()
      .catch((err: unknown) => this.#log.warn({ err }, "tools/list_changed could not be sent"));
  }

  async close(): Promise<void> {
    await this.#server.close();
  }

  async #callTool(request: CallToolRequest, extra: CallExtra): Promise<CallToolResult> {
    const { name } = request.params;
    const args = JsonObjectSchema.safeParse(request.params.arguments ?? {});
    if (!args.success) return toolErrorResult("tool arguments must be a JSON object");
    const oubliette = this.#options.oubliette;
    const own = oubliette?.registry.get(name);
    if (oubliette && own !== undefined) return oubliette.call(own, args.data, extra.signal);
    const tool = this.#options.registry.get(name);
    if (!tool) return toolErrorResult(`unknown tool: ${name}`);

    const token = request.params._meta?.progressToken;
    const stopProgress =
      token === undefined
        ? () => {}
        : startProgressHeartbeat(
            extra.sendNotification,
            token,
            this.#options.progressIntervalMs ?? 10_000,
            this.#log,
          );
    const startedAt = Date.now();
    try {
      const result = await this.#options.link.callerTool(tool.callerTool, args.data, {
        backstopMs: tool.backstopMs,
        signal: extra.signal,
      });
      this.#log.debug({ tool: name, ms: Date.now() - startedAt }, "caller tool answered");
      return toCallToolResult(result);
    } catch (err) {
      this.#log.info({ tool: name, ms: Date.now() - startedAt, err }, "caller tool call failed");
      return failureResult(err);
    } finally {
      stopProgress();
    }
  }
}
