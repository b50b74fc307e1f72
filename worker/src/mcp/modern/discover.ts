import { MODERN_PROTOCOL_VERSIONS } from "../protocol-version.js";
import { CacheHints } from "./cache-hints.js";
import type { ModernMethod } from "./method.js";

/** What a stateless client is told about using this server (`server/discover` instructions). */
const INSTRUCTIONS =
  "Oubliette runs droids (AI coding agents) in containers. Use the session tool to spawn one and " +
  "send it messages. Declare caller_id and caller_tools to lend the droid your own tools: each call " +
  "is a caller_tool_request event (request_id, tool, arguments, deadline); answer it with " +
  "caller_tool_response before its deadline. Follow a session with session events (wait_seconds " +
  "long-polls; since_index = the last next_index), or subscribe to its resource " +
  "oubliette://sessions/{session_id} with subscriptions/listen and read on each update. Sessions " +
  "spawned here default to caller_presence deadline: requests wait for your answer until their " +
  "deadline even while you are not listening.";

/**
 * `server/discover` (mandatory in 2026-07-28): the revisions of the stateless era this server
 * speaks (a 2025 client uses `initialize` instead), its capabilities — derived from the methods
 * it answers, so that they cannot disagree — and instructions. The same for every token.
 */
export function discoverMethod(capabilities: Record<string, unknown>): ModernMethod {
  return {
    async handle() {
      return {
        supportedVersions: [...MODERN_PROTOCOL_VERSIONS],
        capabilities,
        instructions: INSTRUCTIONS,
        ...CacheHints.catalogue,
      };
    },
  };
}
