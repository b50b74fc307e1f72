import { z } from "zod";
import { TunnelMethod } from "../../../protocol/tunnel.js";
import type { Env } from "../env.js";
import { AppError, unwrap } from "../errors.js";
import { objects } from "../objects/keys.js";
import { projectSpec } from "./project-config.js";

/**
 * Requests to a project's host (its container and workspaces), with the answer parsed by the
 * tunnel's result schema. The project must exist; `container start` also places a project that
 * has no host yet.
 */
export async function onProjectHost<T extends z.ZodType>(
  env: Env,
  projectId: string,
  method: (typeof TunnelMethod)[keyof typeof TunnelMethod],
  params: Record<string, unknown>,
  result: T,
  options: { place?: boolean } = {},
): Promise<z.output<T>> {
  const answer = unwrap(
    await objects
      .hostRegistry(env)
      .projectRequest({ projectId, method, params, placeWith: options.place ?? false }),
  );
  const parsed = result.safeParse(answer);
  if (!parsed.success)
    throw new AppError("host_error", `the host's answer to ${method} is not what the protocol says`);
  return parsed.data;
}

/** The answer of a host request that answers nothing but success. */
export const EmptyResultSchema = z.object({}).loose();

/** The project's container spec, from its config (the project must exist). */
export async function specOf(env: Env, projectId: string) {
  const info = unwrap(await objects.project(env, projectId).info());
  return projectSpec(info);
}

export { TunnelMethod };
