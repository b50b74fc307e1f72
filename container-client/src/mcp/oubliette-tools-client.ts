/**
 * The droid's side of Oubliette's own tools: with the API key it was given (OUBLIETTE_API_KEY),
 * list what the key allows (after every connect, and when the host-agent says the list may have
 * changed) and pass calls on. The key is checked by the session's object on every call; an
 * invalid key registers no tools at all, and says why in the log (never the key itself).
 */
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import type { Logger } from "../../../lib/log.js";
import type { JsonObject } from "../../../protocol/json.js";
import { RpcError, RpcErrorCode } from "../../../protocol/rpc/errors.js";
import { SocketMethods } from "../../../protocol/socket.js";
import type { RelayLink } from "../socket/relay-link.js";
import { toolErrorResult } from "../tools/call-result.js";
import { OublietteToolRegistry } from "../tools/oubliette-tool-registry.js";

export class OublietteToolsClient {
  readonly registry = new OublietteToolRegistry();
  readonly #apiKey: string;
  readonly #link: Pick<RelayLink, "request">;
  readonly #log: Logger;
  readonly #changed: () => void;

  constructor(apiKey: string, link: Pick<RelayLink, "request">, log: Logger, changed: () => void) {
    this.#apiKey = apiKey;
    this.#link = link;
    this.#log = log.child({ component: "oubliette-tools" });
    this.#changed = changed;
  }

  /** Lists the key's tools again; a refused key empties the list. */
  async refresh(): Promise<void> {
    try {
      const { tools } = await this.#link.request(SocketMethods.oublietteTools, { api_key: this.#apiKey });
      if (this.registry.replace(tools)) this.#changed();
      this.#log.info({ tools: tools.map((t) => t.name) }, "Oubliette tools listed");
    } catch (err) {
      if (err instanceof RpcError && err.code === RpcErrorCode.InvalidApiKey) {
        this.#log.error("OUBLIETTE_API_KEY was refused (invalid or expired): no Oubliette tools");
        if (this.registry.replace([])) this.#changed();
        return;
      }
      this.#log.warn(
        { err: err instanceof Error ? err.message : String(err) },
        "could not list Oubliette tools",
      );
    }
  }

  async call(tool: string, args: JsonObject, signal: AbortSignal): Promise<CallToolResult> {
    try {
      const result = await this.#link.request(
        SocketMethods.oublietteCallTool,
        { api_key: this.#apiKey, tool, arguments: args },
        signal,
      );
      return result as CallToolResult;
    } catch (err) {
      if (err instanceof RpcError) {
        // -32001 / -32002 and the like: the droid's model reads why, with the code.
        if (err.code === RpcErrorCode.InvalidApiKey) void this.refresh();
        return toolErrorResult(`${err.message} (${err.code})`);
      }
      return toolErrorResult(err instanceof Error ? err.message : String(err));
    }
  }
}
