import { z } from "zod";
import { callTool, initialize } from "./mcp.js";
import { ADMIN_TOKEN } from "./tokens.js";

/** Creates a project (as the admin, through the project tool) and returns its id. */
export async function createProject(
  config: Record<string, unknown> = {},
  token = ADMIN_TOKEN,
): Promise<string> {
  const mcp = await initialize(token);
  const name = `test-${crypto.randomUUID().slice(0, 12)}`;
  const created = await callTool(mcp, "project", { action: "create", name, ...config }, token);
  if (created.isError) throw new Error(`project create failed: ${created.content[0]?.text}`);
  return z.string().parse(created.structuredContent?.project_id);
}
