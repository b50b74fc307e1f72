import { callerToolResponseTool } from "./caller-tool-response-tool.js";
import { ToolRegistry } from "./registry.js";
import { sessionTool } from "./session-tool.js";

/** The tools callers see on the MCP endpoint. */
export const callerTools = new ToolRegistry([sessionTool, callerToolResponseTool]);
