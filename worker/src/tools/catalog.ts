import { approvalResponseTool } from "./approval-response-tool.js";
import { auditTool } from "./audit-tool.js";
import { callerToolResponseTool } from "./caller-tool-response-tool.js";
import { configLimitsTool } from "./config-limits-tool.js";
import { containerTool } from "./container-tool.js";
import { hostTool } from "./host-tool.js";
import { imageRebuildTool } from "./image-rebuild-tool.js";
import { jobTool } from "./job-tool.js";
import { projectChangesTool, projectTasksTool } from "./openspec-tools.js";
import { projectTool } from "./project-tool.js";
import { ToolRegistry } from "./registry.js";
import { scheduleTool } from "./schedule-tool.js";
import { sessionTool } from "./session-tool.js";
import { tokenTool } from "./token-tool.js";
import { usageTool } from "./usage-tool.js";
import { workspaceTool } from "./workspace-tool.js";

/** Every tool definition, in the order tools/list shows them. */
export const toolDefinitions = [
  projectTool,
  sessionTool,
  containerTool,
  workspaceTool,
  scheduleTool,
  jobTool,
  tokenTool,
  hostTool,
  auditTool,
  projectChangesTool,
  projectTasksTool,
  imageRebuildTool,
  configLimitsTool,
  usageTool,
  callerToolResponseTool,
  approvalResponseTool,
];

/** The tools callers see on the MCP endpoint. */
export const callerTools = new ToolRegistry(toolDefinitions);
