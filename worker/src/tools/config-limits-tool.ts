import { z } from "zod";
import { unwrap } from "../errors.js";
import { objects } from "../objects/keys.js";
import { ProjectIdSchema } from "../projects/project-config.js";
import { defineTool } from "./define.js";

export const configLimitsTool = defineTool({
  name: "config_limits",
  title: "A project's limits",
  description: "The project's recursion, agent, cost, container and session-lifetime limits.",
  action: {
    description: "Get the project's limits.",
    access: "read",
    target: "project",
    timing: "sync",
    example: { project_id: "prj_0123456789abcdef01234567" },
    input: z.object({ project_id: ProjectIdSchema }),
    async handler(args, ctx) {
      ctx.authorizeProject(args.project_id);
      const limits = unwrap(await objects.project(ctx.env, args.project_id).limits());
      return { project_id: args.project_id, ...limits };
    },
  },
});
