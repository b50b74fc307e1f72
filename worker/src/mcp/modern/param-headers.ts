import { callerTools } from "../../tools/catalog.js";
import type { McpToolListing } from "../../tools/registry.js";
import { decodeHeaderValue, headerMatchesBody } from "./header-values.js";

/**
 * Tool parameters that stateless (2026-07-28) clients mirror into `Mcp-Param-{Name}` headers
 * (`x-mcp-header`, SEP-2243), by property name. The one table: the 2026 `tools/list` annotates
 * these properties from it, and `tools/call` checks the headers against it. `project_id` is there
 * so that edge rules (rate limits, logs, firewalls) can key on the project without reading
 * bodies; a project id is not a secret. Only string, integer and boolean properties qualify.
 */
export const PARAM_HEADERS: Readonly<Record<string, string>> = { project_id: "Project-Id" };

/** The request headers the table makes clients send (for CORS). */
export const PARAM_HEADER_NAMES = Object.values(PARAM_HEADERS).map(
  (name) => `mcp-param-${name.toLowerCase()}`,
);

const MIRRORABLE = new Set(["string", "integer", "boolean"]);

/** Which parameters of `tool` are mirrored, and into which header name. */
function mirrored(tool: McpToolListing): [property: string, header: string][] {
  const properties = tool.inputSchema.properties ?? {};
  return Object.entries(PARAM_HEADERS).filter(([property]) =>
    MIRRORABLE.has(String(properties[property]?.type)),
  );
}

/** A tool listing with its mirrored parameters marked `x-mcp-header` (2026 `tools/list` only). */
export function withParamHeaders(tool: McpToolListing): McpToolListing {
  const marks = mirrored(tool);
  if (marks.length === 0) return tool;
  const properties = { ...tool.inputSchema.properties };
  for (const [property, header] of marks)
    properties[property] = { ...properties[property], "x-mcp-header": header };
  return { ...tool, inputSchema: { ...tool.inputSchema, properties } };
}

const listings = new Map(callerTools.list().map((tool) => [tool.name, tool]));

/**
 * Checks a `tools/call`'s `Mcp-Param-*` headers against its arguments: a mirrored argument that
 * is present needs its header, matching (after Base64 decoding); a recognised header must be
 * well formed even when its argument is absent. Null when they agree, else why not.
 */
export function paramHeaderMismatch(
  toolName: string,
  args: Record<string, unknown>,
  header: (name: string) => string | undefined,
): string | null {
  const tool = listings.get(toolName);
  if (!tool) return null;
  for (const [property, name] of mirrored(tool)) {
    const raw = header(`mcp-param-${name}`);
    const value = args[property];
    const decoded = raw === undefined ? null : decodeHeaderValue(raw);
    if (decoded !== null && !decoded.ok) return `Mcp-Param-${name} ${decoded.reason}`;
    if (value === undefined || value === null) continue;
    if (decoded === null) return `Mcp-Param-${name} header is required when ${property} is given`;
    if (!headerMatchesBody(decoded.value, value)) {
      return `Mcp-Param-${name} header value does not match the body's ${property}`;
    }
  }
  return null;
}
