/**
 * Input-required results (MCP 2026-07-28, SEP-2322): an action that cannot be undone (`project
 * delete`) asks a stateless client that declares `elicitation` for confirmation, runs on a yes,
 * not on a no, and refuses a `requestState` that was tampered with, has expired, or was minted for
 * another token or other arguments.
 */
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { McpErrorCode } from "../../worker/src/mcp/json-rpc.js";
import {
  mintRequestState,
  REQUEST_STATE_TTL_MS,
  verifyRequestState,
} from "../../worker/src/mcp/modern/request-state.js";
import { callTool, initialize } from "./support/mcp.js";
import { modernRpc } from "./support/modern.js";
import { createProject } from "./support/projects.js";
import { OTHER_TOKEN, READER_TOKEN } from "./support/tokens.js";

const ELICIT = { elicitation: {} };

const InputRequiredSchema = z.object({
  resultType: z.literal("input_required"),
  inputRequests: z.object({
    confirm: z.object({
      method: z.literal("elicitation/create"),
      params: z.object({
        mode: z.literal("form"),
        message: z.string(),
        requestedSchema: z.object({
          type: z.literal("object"),
          properties: z.object({ confirm: z.object({ type: z.literal("boolean") }).loose() }),
          required: z.array(z.string()),
        }),
      }),
    }),
  }),
  requestState: z.string().min(16),
});

/** `project delete` as a stateless call; `extra` params carry inputResponses / requestState. */
function deleteCall(
  projectId: string,
  extra: Record<string, unknown> = {},
  options: { capabilities?: Record<string, unknown>; token?: string } = {},
) {
  return modernRpc(
    "tools/call",
    { name: "project", arguments: { action: "delete", project_id: projectId }, ...extra },
    {
      headers: { "mcp-param-project-id": projectId },
      capabilities: options.capabilities ?? ELICIT,
      ...(options.token ? { token: options.token } : {}),
    },
  );
}

async function exists(projectId: string): Promise<boolean> {
  const got = await callTool(await initialize(), "project", { action: "get", project_id: projectId });
  return got.isError !== true;
}

const yes = { confirm: { action: "accept", content: { confirm: true } } };

describe("a stateless client that can be asked", () => {
  it("is asked first, in a form naming the project; nothing is deleted yet", async () => {
    const projectId = await createProject();
    const first = await deleteCall(projectId);
    const round = InputRequiredSchema.parse(first.result);
    expect(round.inputRequests.confirm.params.message).toContain(projectId);
    expect(round.inputRequests.confirm.params.requestedSchema.required).toEqual(["confirm"]);
    // No caching hints on an input-required result.
    expect(first.result).not.toHaveProperty("ttlMs");
    expect(await exists(projectId)).toBe(true);
  });

  it("deletes on a yes, with the state echoed", async () => {
    const projectId = await createProject();
    const round = InputRequiredSchema.parse((await deleteCall(projectId)).result);
    const done = await deleteCall(projectId, { inputResponses: yes, requestState: round.requestState });
    expect(done.result).toMatchObject({ resultType: "complete", structuredContent: { deleted: true } });
    expect(await exists(projectId)).toBe(false);
  });

  it.each([
    ["declined", { confirm: { action: "decline" } }],
    ["cancelled", { confirm: { action: "cancel" } }],
    ["accepted without a yes", { confirm: { action: "accept", content: { confirm: false } } }],
  ])("does not delete when the human %s", async (_, inputResponses) => {
    const projectId = await createProject();
    const round = InputRequiredSchema.parse((await deleteCall(projectId)).result);
    const answer = await deleteCall(projectId, { inputResponses, requestState: round.requestState });
    expect(answer.result).toMatchObject({
      isError: true,
      structuredContent: { error: { code: "cancelled" } },
    });
    expect(await exists(projectId)).toBe(true);
  });

  it("asks again when the retry carries the state but no answer", async () => {
    const projectId = await createProject();
    const round = InputRequiredSchema.parse((await deleteCall(projectId)).result);
    const again = await deleteCall(projectId, { requestState: round.requestState });
    InputRequiredSchema.parse(again.result);
    expect(await exists(projectId)).toBe(true);
  });
});

describe("requestState is attacker-controlled input", () => {
  const refused = (answer: Awaited<ReturnType<typeof deleteCall>>) => {
    expect(answer.error).toMatchObject({
      code: McpErrorCode.invalidParams,
      message: "Invalid or expired requestState",
      data: { reason: "invalid_request_state" },
    });
  };

  it("refuses a tampered state, and deletes nothing", async () => {
    const projectId = await createProject();
    const round = InputRequiredSchema.parse((await deleteCall(projectId)).result);
    refused(
      await deleteCall(projectId, { inputResponses: yes, requestState: `${round.requestState}-TAMPERED` }),
    );
    const [body = "", mac = ""] = round.requestState.split(".");
    const flipped = `${body.slice(0, -2)}${body.endsWith("A") ? "B" : "A"}${body.slice(-1)}.${mac}`;
    refused(await deleteCall(projectId, { inputResponses: yes, requestState: flipped }));
    refused(await deleteCall(projectId, { inputResponses: yes, requestState: 42 }));
    expect(await exists(projectId)).toBe(true);
  });

  it("refuses a state minted for other arguments (another project)", async () => {
    const asked = await createProject();
    const other = await createProject();
    const round = InputRequiredSchema.parse((await deleteCall(asked)).result);
    refused(await deleteCall(other, { inputResponses: yes, requestState: round.requestState }));
    expect(await exists(other)).toBe(true);
  });

  it("refuses a state minted for another token", async () => {
    const projectId = await createProject();
    const round = InputRequiredSchema.parse((await deleteCall(projectId)).result);
    refused(
      await deleteCall(
        projectId,
        { inputResponses: yes, requestState: round.requestState },
        { token: OTHER_TOKEN },
      ),
    );
    expect(await exists(projectId)).toBe(true);
  });

  it("expires", async () => {
    const binding = { tokenId: "admin", method: "tools/call", tool: "project.delete", arguments: { a: 1 } };
    const state = await mintRequestState(env, binding, 1_000);
    expect(await verifyRequestState(env, state, binding, 1_000 + REQUEST_STATE_TTL_MS - 1)).toBe(true);
    expect(await verifyRequestState(env, state, binding, 1_000 + REQUEST_STATE_TTL_MS)).toBe(false);
  });
});

describe("clients that are not asked", () => {
  it("a client without elicitation deletes at once, as in the 2025 era", async () => {
    const projectId = await createProject();
    const done = await deleteCall(projectId, {}, { capabilities: {} });
    expect(done.result).toMatchObject({ resultType: "complete", structuredContent: { deleted: true } });
  });

  it("a token that may not delete is refused without being asked", async () => {
    const projectId = await createProject();
    const answer = await deleteCall(projectId, {}, { token: READER_TOKEN });
    expect(answer.result).toMatchObject({
      isError: true,
      structuredContent: { error: { code: "forbidden" } },
    });
  });

  it("an action without a question is never a round", async () => {
    const listed = await modernRpc(
      "tools/call",
      { name: "project", arguments: { action: "list" } },
      { capabilities: ELICIT },
    );
    expect(listed.result).toMatchObject({ resultType: "complete" });
  });
});
