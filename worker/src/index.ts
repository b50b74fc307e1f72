import { app } from "./app.js";
import type { Env } from "./env.js";

export { HostRegistryDurableObject } from "./hosts/host-registry-do.js";
export { McpSessionDurableObject } from "./mcp/mcp-session-do.js";
export { SessionDurableObject } from "./session/session-do.js";

export default {
  fetch: app.fetch,
} satisfies ExportedHandler<Env>;
