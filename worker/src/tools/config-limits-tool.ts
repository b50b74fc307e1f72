import { z } from "zod";
import { DEFAULT_DENIAL_MESSAGE } from "../../../protocol/approvals.js";
import { unwrap } from "../errors.js";
import { objects } from "../objects/keys.js";
import { ProjectIdSchema } from "../projects/project-config.js";
import { defineTool } from "./define.js";

export const configLimitsTool = defineTool({
  name: "config_limits",
  title: "A project's limits",
  description:
    "The project's recursion, agent, cost, container and session-lifetime limits, its approval policy (what agents ask before acting), and its network and setup (what agents and setup commands may reach).",
  action: {
    description: "Get the project's limits.",
    access: "read",
    target: "project",
    timing: "sync",
    example: { project_id: "prj_0123456789abcdef01234567" },
    input: z.object({ project_id: ProjectIdSchema }),
    async handler(args, ctx) {
      ctx.authorizeProject(args.project_id);
      const info = unwrap(await objects.project(ctx.env, args.project_id).info());
      return {
        project_id: args.project_id,
        ...info.limits,
        approvals: {
          policy: info.approval_policy,
          timeout_seconds: info.approval_timeout_seconds,
          denial_message: info.approval_denial_message ?? DEFAULT_DENIAL_MESSAGE,
        },
        network: info.network,
        setup: {
          steps: info.setup.length,
          network: info.setup_network,
          timeout_seconds: info.setup_timeout_seconds,
        },
      };
    },
  },
});
