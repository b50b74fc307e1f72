import { callObject } from "../api.js";
import { button, h, labelled, replace } from "../dom.js";
import { type ErrorSlot, errorSlot, guarded, messageOf } from "../errors.js";
import { hostPort, when } from "../format.js";
import { type JsonRecord, list, num, pretty, rec, str } from "../json.js";
import type { Scope } from "../live.js";

/**
 * A session's pending requests (`session pending`): the droid's calls of its caller's tools and
 * its agent's approval requests, each answerable in place by people who may write the project.
 * Articles are kept across refreshes (what a person typed stays) and go once the server no
 * longer lists them.
 */
const REFRESH_MS = 3_000;

interface CallerRequest {
  request_id: string;
  tool: string;
  arguments: unknown;
  deadline: string | null;
}

interface Approval {
  request_id: string;
  kind: string;
  summary: string;
  request: JsonRecord;
  deadline: string | null;
}

function parseCall(r: JsonRecord): CallerRequest | null {
  const id = str(r, "request_id");
  return id === null
    ? null
    : {
        request_id: id,
        tool: str(r, "tool") ?? "?",
        arguments: r.arguments ?? {},
        deadline: str(r, "deadline"),
      };
}

function parseApproval(r: JsonRecord): Approval | null {
  const id = str(r, "request_id");
  if (id === null) return null;
  const request = rec(r, "request") ?? {};
  return {
    request_id: id,
    kind: str(r, "kind") ?? str(request, "kind") ?? "?",
    summary: str(r, "summary") ?? str(request, "summary") ?? "",
    request,
    deadline: str(r, "deadline"),
  };
}

/** A network request's target: the method (when the gate saw one) and `host:port`. */
function networkTarget(r: JsonRecord): string {
  const host = str(r, "host") ?? "?";
  return `${str(r, "method") ?? "a connection to"} ${hostPort(host, num(r, "port"))}`;
}

/**
 * The exact thing asked about: the command, the path and its diff, the tool and its arguments,
 * or the host, port and method a network request wants.
 */
function subject(approval: Approval): string {
  const r = approval.request;
  if (approval.kind === "network") return networkTarget(r);
  const command = str(r, "command");
  if (command !== null) return command;
  const path = str(r, "path");
  if (path !== null) return [path, str(r, "diff")].filter((part) => part !== null).join("\n\n");
  const tool = str(r, "tool");
  if (tool !== null) return `${tool}\n${pretty(r.arguments ?? {})}`;
  return approval.summary;
}

export interface PendingSection {
  readonly el: HTMLElement;
  /** Reads the pending requests again soon (an event said they changed). */
  poke(): void;
}

export function pendingSection(scope: Scope, sessionId: string, writable: boolean): PendingSection {
  const items = h("div", { class: "pending-items" });
  const empty = h("p", { class: "empty" }, "Nothing waits for an answer.");
  const errors = errorSlot();
  const el = h("section", { class: "pending" }, h("h2", {}, "Pending requests"), errors.el, empty, items);
  const shown = new Map<string, HTMLElement>();

  const answer = (slot: ErrorSlot, controls: HTMLButtonElement[], name: string, args: JsonRecord) =>
    guarded(
      slot,
      async () => {
        await callObject(name, { session_id: sessionId, ...args });
        for (const control of controls) control.hidden = true;
        slot.el.append(h("p", { class: "muted" }, "Answered."));
        refresher.poke();
      },
      controls,
    );

  const callArticle = (call: CallerRequest): HTMLElement => {
    const article = h(
      "article",
      { "aria-label": `Caller tool request ${call.request_id}`, class: "card" },
      h("h3", {}, `Caller tool ${call.tool}`),
      h("p", { class: "muted" }, `Request ${call.request_id}, answer by ${when(call.deadline)}`),
      h("pre", {}, pretty(call.arguments)),
    );
    if (!writable) return article;
    const slot = errorSlot();
    const field = h("textarea", {
      rows: 4,
      spellcheck: false,
      placeholder: '{"content":[{"type":"text","text":"…"}]}',
    });
    const controls: HTMLButtonElement[] = [];
    const sendResult = button("Send result", () => {
      let result: unknown;
      try {
        result = JSON.parse(field.value);
      } catch (err) {
        slot.show(`The result is not valid JSON: ${messageOf(err)}`);
        return;
      }
      void answer(slot, controls, "caller_tool_response", { request_id: call.request_id, result });
    });
    const sendError = button("Send error", () => {
      if (field.value.trim() === "") {
        slot.show("Write the error message in the field first.");
        return;
      }
      void answer(slot, controls, "caller_tool_response", {
        request_id: call.request_id,
        error: field.value,
      });
    });
    controls.push(sendResult, sendError);
    article.append(labelled("Result (JSON)", field), h("div", { class: "actions" }, ...controls), slot.el);
    return article;
  };

  const approvalArticle = (approval: Approval): HTMLElement => {
    const cwd = str(approval.request, "cwd");
    const article = h(
      "article",
      { "aria-label": `Approval ${approval.request_id}`, class: "card" },
      h(
        "h3",
        {},
        approval.kind === "network"
          ? `Approval: network, ${networkTarget(approval.request)}`
          : `Approval: ${approval.kind}`,
      ),
      h("p", {}, approval.summary),
      h("pre", {}, subject(approval)),
      approval.kind === "network"
        ? h(
            "p",
            { class: "muted" },
            "Allow for project adds this host and port to the project's network allowlist.",
          )
        : null,
      cwd ? h("p", { class: "muted" }, `in ${cwd}`) : null,
      h(
        "p",
        { class: "muted" },
        `Request ${approval.request_id}, denied unless answered by ${when(approval.deadline)}`,
      ),
    );
    if (!writable) return article;
    const slot = errorSlot();
    const message = h("input", { type: "text", autocomplete: "off" });
    const controls: HTMLButtonElement[] = [];
    const decide = (decision: "allow" | "allow_session" | "allow_project" | "deny") => {
      const args: JsonRecord = { request_id: approval.request_id, decision };
      if (decision === "deny" && message.value.trim() !== "") args.message = message.value;
      void answer(slot, controls, "approval_response", args);
    };
    const network = approval.kind === "network";
    controls.push(
      button("Allow once", () => decide("allow")),
      button("Allow for session", () => decide("allow_session")),
      // Only a network request can be allowed for the project: its host joins the allowlist.
      ...(network ? [button("Allow for project", () => decide("allow_project"))] : []),
      button("Deny", () => decide("deny"), "danger"),
    );
    article.append(
      labelled("Message for the agent", message),
      h("div", { class: "actions" }, ...controls),
      slot.el,
    );
    return article;
  };

  const refresher = scope.every(REFRESH_MS, async () => {
    let answerValue: JsonRecord;
    try {
      answerValue = await callObject("session", { action: "pending", session_id: sessionId });
    } catch (err) {
      if (!scope.disposed) errors.show(messageOf(err));
      return;
    }
    errors.clear();
    const wanted = new Map<string, () => HTMLElement>();
    for (const call of list(answerValue, "open_requests", parseCall)) {
      wanted.set(`call:${call.request_id}`, () => callArticle(call));
    }
    for (const approval of list(answerValue, "open_approvals", parseApproval)) {
      wanted.set(`approval:${approval.request_id}`, () => approvalArticle(approval));
    }
    for (const [key, article] of shown) {
      if (wanted.has(key)) continue;
      article.remove();
      shown.delete(key);
    }
    for (const [key, make] of wanted) {
      if (shown.has(key)) continue;
      const article = make();
      shown.set(key, article);
      items.append(article);
    }
    empty.hidden = shown.size > 0;
    if (shown.size === 0) replace(items);
  });
  return { el, poke: () => refresher.poke() };
}
