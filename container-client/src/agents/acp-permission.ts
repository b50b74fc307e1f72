/**
 * ACP's `session/request_permission`, answered at once so an unattended session never waits on
 * a person: the agents are started to allow everything (OpenCode `permission: {"*": "allow"}`,
 * Gemini `--yolo`), so a request is rare; when one comes, the one-time allow option is chosen
 * (else an "always" one), and a request that offers no allow option is cancelled.
 */
import { PermissionRequestSchema } from "./acp-wire.js";
import type { RequestAnswer } from "./json-rpc.js";

const ALLOW_KINDS = ["allow_once", "allow_always"];

export function answerPermission(params: unknown): RequestAnswer {
  const request = PermissionRequestSchema.safeParse(params).data;
  const what = request?.toolCall?.title ?? "a tool call";
  for (const kind of ALLOW_KINDS) {
    const option = request?.options.find((candidate) => candidate.kind === kind);
    if (option !== undefined) {
      return {
        result: { outcome: { outcome: "selected", optionId: option.optionId } },
        granted: true,
        message: `allowed ${what} (${option.name ?? option.optionId})`,
      };
    }
  }
  return {
    result: { outcome: { outcome: "cancelled" } },
    granted: false,
    message: `cancelled the permission request for ${what}: it offered no option to allow it`,
  };
}
