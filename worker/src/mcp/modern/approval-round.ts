import { ApprovalIdSchema, ApprovalRequestSchema } from "../../../../protocol/approvals.js";
import { can, project } from "../../auth/access.js";
import { errorMessage } from "../../log.js";
import { objects } from "../../objects/keys.js";
import { callerTools } from "../../tools/catalog.js";
import { actionLabel } from "../../tools/define.js";
import {
  type ApprovalRequestEvent,
  elicitationParams,
  readElicitResult,
} from "../approval-elicitation-form.js";
import { clip } from "../json-rpc.js";
import type { ClientCapabilities } from "./envelope.js";
import type { ModernCall } from "./method.js";
import { invalidRequestState, mintRequestState, openRequestState } from "./request-state.js";

/** The tool, and its actions, a caller follows a droid session with. */
const SESSION_TOOL = "session";
const FOLLOWING = new Set(["events", "pending", "get"]);

/** Most approvals one round asks about (soonest deadline first); the rest wait for the next call. */
export const MAX_APPROVAL_FORMS = 5;

const KEY_PREFIX = "approval:";

/** The input-request key of approval `requestId`. */
export function approvalKey(requestId: string): string {
  return `${KEY_PREFIX}${requestId}`;
}

/**
 * Whether the request declared form elicitation: `elicitation: {}` (form, by default) or with
 * `form`; `{url: {}}` alone is URL mode only, which cannot show the form.
 */
function elicitsForms(capabilities: ClientCapabilities): boolean {
  const elicitation = capabilities.elicitation;
  if (elicitation === undefined) return false;
  return Object.keys(elicitation).length === 0 || "form" in elicitation;
}

/**
 * The input-required round (SEP-2322) of a stateless caller following a droid session
 * (`session events|pending|get`): the approval requests waiting in that session are put to the
 * client's human as `elicitation/create` forms — the same form as the 2025 era's
 * (approval-elicitation-form.ts), one per approval (at most MAX_APPROVAL_FORMS, soonest deadline
 * first), keyed `approval:<request_id>` — when the request declared form elicitation and its token
 * may answer them (write access to the session's project). Otherwise, and when none waits, null:
 * the call runs.
 *
 * The retry carries `inputResponses` and the `requestState`, which must verify (bound to the
 * token, the method, the tool action and its arguments; else -32602). Each answer to a form the
 * round asked is applied with the call's principal, as `approval_response` would be (accept with
 * a decision is that decision, decline a deny; cancel and anything unusable answer nothing), then
 * null: the call runs without asking again, so a person who dismisses the dialog is never held in
 * a loop (approvals still waiting are asked at the next call). Refused answers (already decided,
 * expired, no access) are logged and audited, never fatal.
 */
export async function approvalRound(
  call: ModernCall,
  name: string,
  rawArguments: unknown,
): Promise<Record<string, unknown> | null> {
  if (name !== SESSION_TOOL) return null;
  const state = call.params.requestState;
  const askable = elicitsForms(call.envelope.capabilities);
  // Cheapest first: most calls neither answer a round nor can be asked.
  if (state === undefined && !askable) return null;
  const tool = callerTools.get(SESSION_TOOL);
  if (!tool) return null;
  const parsed = tool.arguments.safeParse(rawArguments ?? {});
  if (!parsed.success || !FOLLOWING.has(parsed.data.action)) return null;
  const sessionId = parsed.data.session_id;
  if (typeof sessionId !== "string") return null;
  const binding = {
    tokenId: call.principal.tokenId,
    method: "tools/call",
    tool: actionLabel(tool.definition, parsed.data.action),
    arguments: parsed.data,
  };

  if (state !== undefined) {
    const opened = typeof state === "string" ? await openRequestState(call.env, state, binding) : null;
    if (opened === null) throw invalidRequestState();
    await applyAnswers(call, sessionId, opened.asked, call.params.inputResponses);
    return null;
  }

  // A token without write access anywhere answers nothing: spare the session a look.
  if (!can(call.principal, "write", project(null))) return null;
  const info = await objects.session(call.env, sessionId).getInfo(call.principal, null);
  // Not found, or not readable: the call itself says so.
  if (!info.ok || !can(call.principal, "write", project(info.value.project_id))) return null;
  const inputRequests: Record<string, unknown> = {};
  for (const open of info.value.open_approvals) {
    if (Object.keys(inputRequests).length >= MAX_APPROVAL_FORMS) break;
    const request = ApprovalRequestSchema.safeParse(open.request);
    if (!request.success) continue;
    // index and ts are not read by the form.
    const event: ApprovalRequestEvent = {
      ...request.data,
      type: "approval_request",
      session_id: sessionId,
      index: 0,
      ts: open.deadline,
      request_id: open.request_id,
      agent: open.agent,
      deadline: open.deadline,
    };
    inputRequests[approvalKey(open.request_id)] = {
      method: "elicitation/create",
      params: elicitationParams(event, call.envelope.protocolVersion),
    };
  }
  const asked = Object.keys(inputRequests);
  if (asked.length === 0) return null;
  call.log.info("approvals put to the client as an input-required round", {
    session: sessionId,
    requests: asked.length,
  });
  return {
    resultType: "input_required",
    inputRequests,
    requestState: await mintRequestState(call.env, binding, Date.now(), asked),
  };
}

/** Applies the answers to the forms the round asked (`asked`: their keys); other keys are ignored. */
async function applyAnswers(
  call: ModernCall,
  sessionId: string,
  asked: readonly string[],
  inputResponses: unknown,
): Promise<void> {
  const responses =
    typeof inputResponses === "object" && inputResponses !== null && !Array.isArray(inputResponses)
      ? (inputResponses as Record<string, unknown>)
      : {};
  const clientName = call.envelope.clientInfo?.name ?? "the MCP client";
  for (const key of asked) {
    const requestId = ApprovalIdSchema.safeParse(key.slice(KEY_PREFIX.length));
    if (!key.startsWith(KEY_PREFIX) || !requestId.success) continue;
    const read = Object.hasOwn(responses, key)
      ? readElicitResult(responses[key], clientName)
      : ({ kind: "none", why: "no answer" } as const);
    if (read.kind === "none") {
      call.log.info("approval form answered nothing; the approval still waits", {
        session: sessionId,
        request: requestId.data,
        why: read.why,
      });
      continue;
    }
    const fields = {
      session: sessionId,
      request: requestId.data,
      action: read.action,
      answer: read.answer,
      token: call.principal.tokenId,
    };
    let outcome: string;
    try {
      const answered = await objects.session(call.env, sessionId).answerApproval({
        principal: call.principal,
        requestId: requestId.data,
        answer: read.answer,
        message: read.message,
      });
      if (answered.ok) {
        outcome = "ok";
        call.log.info("approval answered through an input-required round", fields);
      } else {
        outcome = answered.error.code;
        call.log.warn("approval answer through an input-required round refused", {
          ...fields,
          code: answered.error.code,
          error: clip(answered.error.message, 300),
        });
      }
    } catch (err) {
      call.log.warn("approval answer through an input-required round failed", {
        ...fields,
        error: errorMessage(err),
      });
      continue;
    }
    // A decision made outside the tools: audited here, as approval_response is by dispatch.
    await objects
      .audit(call.env)
      .record({
        at: Date.now(),
        token_id: call.principal.tokenId,
        action: `elicitation approval_response ${read.answer}`,
        target: `${sessionId}/${requestId.data}`,
        outcome,
      })
      .catch((err: unknown) =>
        call.log.error("could not write the audit log", { ...fields, error: errorMessage(err) }),
      );
  }
}
