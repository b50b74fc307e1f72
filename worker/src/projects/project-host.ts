import { z } from "zod";
import { TunnelMethod } from "../../../protocol/tunnel.js";
import type { Env } from "../env.js";
import { AppError, unwrap } from "../errors.js";
import type { ToolContext } from "../flows/context.js";
import { objects } from "../objects/keys.js";
import { projectSpec } from "./project-config.js";

export interface HostRequestOptions {
  /** Place a project that has no host yet (container start). */
  place?: boolean;
  /** Cancels the request: the registry sends the host `notifications/cancelled` and answers `cancelled`. */
  signal?: AbortSignal | undefined;
  /** How long the host may take to answer (default: the registry's ack timeout). */
  timeoutMs?: number;
  /** Hears the host's progress lines for the project while the request waits (an image's pull). */
  onProgress?: (message: string) => void;
}

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
  options: HostRequestOptions = {},
): Promise<z.output<T>> {
  const registry = objects.hostRegistry(env);
  const { signal, timeoutMs } = options;
  if (signal?.aborted) throw new AppError("cancelled", `${method} was cancelled before it was sent`);
  // The registry knows the request by this key, so that a cancel can name it to the host.
  const cancelKey = signal ? crypto.randomUUID() : undefined;
  const onAbort = () => {
    const reason = signal?.reason instanceof Error ? signal.reason.message : "cancelled";
    void registry.cancelProjectRequest({ cancelKey: cancelKey as string, reason }).catch(() => {});
  };
  signal?.addEventListener("abort", onAbort, { once: true });
  let answer: unknown;
  try {
    answer = unwrap(
      await registry.projectRequest({
        projectId,
        method,
        params,
        placeWith: options.place ?? false,
        ...(cancelKey ? { cancelKey } : {}),
        ...(timeoutMs ? { timeoutMs } : {}),
        ...(options.onProgress ? { onProgress: options.onProgress } : {}),
      }),
    );
  } finally {
    signal?.removeEventListener("abort", onAbort);
  }
  const parsed = result.safeParse(answer);
  if (!parsed.success)
    throw new AppError("host_error", `the host's answer to ${method} is not what the protocol says`);
  return parsed.data;
}

/** A tool call's progress (its job's, or the MCP call's) fed by a host request's progress lines. */
export function hostProgress(ctx: Pick<ToolContext, "mcp">): (message: string) => void {
  let lines = 0;
  return (message) => {
    lines += 1;
    ctx.mcp?.progress({ progress: lines, message });
  };
}

/** The answer of a host request that answers nothing but success. */
export const EmptyResultSchema = z.object({}).loose();

/** The project's container spec, from its config (the project must exist). */
export async function specOf(env: Env, projectId: string) {
  const info = unwrap(await objects.project(env, projectId).info());
  return projectSpec(info);
}

export { TunnelMethod };
