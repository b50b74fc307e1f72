/**
 * The container-client's MCP mode: the droid's MCP server over stdio. It lends the droid the
 * caller's tools by relaying calls to the host-agent over the session's Unix socket. stdout is the
 * MCP channel, so every log line goes to stderr.
 */
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";
import type { Logger } from "../../../lib/log.js";
import { API_KEY_ENV } from "../../../protocol/oubliette-tools.js";
import { AgentEnv, DEFAULT_SOCKET_PATH } from "../../../protocol/socket.js";
import { RelayLink } from "../socket/relay-link.js";
import { CallerToolRegistry } from "../tools/caller-tool-registry.js";
import { DroidMcpServer, SERVER_NAME } from "./droid-mcp-server.js";
import { FirstListing } from "./first-listing.js";
import { OublietteToolsClient } from "./oubliette-tools-client.js";

/** Serves the droid on stdio until it goes away. */
export async function serveDroid(log: Logger, version: string): Promise<void> {
  const socketPath = process.env[AgentEnv.socketPath] || DEFAULT_SOCKET_PATH;
  const sessionToken = process.env[AgentEnv.sessionToken] ?? "";
  const apiKey = process.env[API_KEY_ENV] ?? "";

  const registry = new CallerToolRegistry();
  // The agent's first tool list waits for both sources (some CLIs never list again).
  const listing = new FirstListing([
    ...(sessionToken !== "" ? (["caller_tools"] as const) : []),
    ...(sessionToken !== "" && apiKey !== "" ? (["oubliette_tools"] as const) : []),
  ]);
  const link = new RelayLink({
    socketPath,
    sessionToken,
    logger: log,
    client: { name: SERVER_NAME, version: version },
    onConnected: () => void oubliette?.refresh().finally(() => listing.settle("oubliette_tools")),
    onOublietteToolsChanged: () => void oubliette?.refresh(),
    onRejected: () => {
      listing.settle("caller_tools");
      listing.settle("oubliette_tools");
    },
    // Only called once the link has started, below, after `mcp` exists.
    onConfig: (config) => {
      listing.settle("caller_tools");
      const changed = registry.replace(config);
      log.info(
        { caller_id: config.caller_id, tools: registry.list().length, changed },
        "caller tools config",
      );
      if (changed) mcp.toolsChanged();
    },
  });
  const oubliette =
    apiKey === "" ? null : new OublietteToolsClient(apiKey, link, log, () => mcp.toolsChanged());
  const mcp = new DroidMcpServer({
    link,
    registry,
    logger: log,
    version: version,
    firstListing: listing,
    ...(oubliette
      ? { oubliette: { registry: oubliette.registry, call: (t, a, s) => oubliette.call(t, a, s) } }
      : {}),
  });

  let stopping: Promise<void> | undefined;
  /** Stops once: the droid went away (stdin ended) or we were told to. */
  function shutdown(reason: string): Promise<void> {
    stopping ??= (async () => {
      log.info({ reason }, "shutting down");
      await Promise.allSettled([link.close(), mcp.close()]);
      process.exit(0);
    })();
    return stopping;
  }

  if (sessionToken === "") {
    log.error(`${AgentEnv.sessionToken} is not set; serving no caller tools`);
  } else {
    link.start();
  }
  await mcp.connect(new StdioServerTransport(), () => void shutdown("MCP transport closed"));
  // The SDK's stdio transport does not watch for end of input; without this we would outlive the droid.
  process.stdin.once("end", () => void shutdown("stdin ended"));
  process.once("SIGTERM", () => void shutdown("SIGTERM"));
  process.once("SIGINT", () => void shutdown("SIGINT"));
  log.info({ socket: socketPath }, "container-client started");
}
