import { z } from "zod";
import { ProjectRefreshResultSchema } from "../../../protocol/tunnel-projects.js";
import { AppError, unwrap } from "../errors.js";
import { objects } from "../objects/keys.js";
import { ProjectIdSchema } from "../projects/project-config.js";
import { hostProgress, onProjectHost, specOf, TunnelMethod } from "../projects/project-host.js";
import { defineTool } from "./define.js";

export const imageRebuildTool = defineTool({
  name: "image_rebuild",
  title: "Recreate a project's container",
  description:
    "Recreate a project's container from the current image (container refresh), keeping its workspaces. Refused while sessions run.",
  action: {
    description: "Recreate the project's container from the current image.",
    // The seed's table: global + write.
    access: "write",
    target: "global",
    timing: "async_medium",
    example: { project_id: "prj_0123456789abcdef01234567" },
    input: z.object({ project_id: ProjectIdSchema }),
    async handler(args, ctx) {
      ctx.auditTarget(args.project_id);
      const busy = unwrap(await objects.project(ctx.env, args.project_id).liveSessions());
      if (busy.length > 0) {
        throw new AppError(
          "conflict",
          `project ${args.project_id} has running sessions (${busy.join(", ")}); end them before recreating its container`,
        );
      }
      const spec = await specOf(ctx.env, args.project_id);
      const refreshed = await onProjectHost(
        ctx.env,
        args.project_id,
        TunnelMethod.projectRefresh,
        { spec },
        ProjectRefreshResultSchema,
        { place: true, onProgress: hostProgress(ctx) },
      );
      return { project_id: args.project_id, recreated: true, ...refreshed };
    },
  },
});
