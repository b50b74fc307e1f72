import type { JSONRPCErrorResponse, JSONRPCResultResponse } from "@modelcontextprotocol/sdk/types.js";
import type { SessionEvent } from "../../../protocol/events.js";
import type { CallerPrincipal } from "../auth/tokens.js";
import type { Env } from "../env.js";
import { errorMessage, type Log } from "../log.js";
import { objects } from "../objects/keys.js";
import {
  type ApprovalRequestEvent,
  decidedReason,
  elicitationId,
  elicitationParams,
  readElicitResult,
} from "./approval-elicitation-form.js";
import { clip } from "./json-rpc.js";
import type { McpMeta } from "./mcp-meta.js";

const SCHEMA = `
CREATE TABLE IF NOT EXISTS approval_elicitations (
  id TEXT PRIMARY KEY,
  session_id TEXT NOT NULL,
  request_id TEXT NOT NULL,
  sent_at INTEGER NOT NULL,
  until INTEGER NOT NULL
);
`;

/** Most elicitations one MCP session keeps open; past it the oldest is withdrawn. */
export const MAX_OPEN_ELICITATIONS = 64;
/** An elicitation is forgotten this long after its approval's deadline, if no decision arrived. */
const AFTER_DEADLINE_MS = 60_000;
/** When an approval_request's deadline cannot be read. */
const FALLBACK_MS = 24 * 3600_000;

type ClientResponse = JSONRPCResultResponse | JSONRPCErrorResponse;

export interface ApprovalElicitationsDeps {
  sql: SqlStorage;
  env: Env;
  log(): Log;
  /** Sends a JSON-RPC message on the MCP session's event stream (kept in its outbox, for Last-Event-ID). */
  send(message: string): void;
}

/**
 * Approval requests put to a 2025-era client's human natively. For a client that declared form
 * elicitation, each `approval_request` it is delivered is also sent as `elicitation/create` (id
 * `approval:<session_id>:<request_id>`), remembered in the object's SQLite until answered,
 * decided or past its deadline. The client's response answers the approval at its session
 * object with the POST's principal (which checks that it is a writer of the project): accept with
 * a decision, decline as a deny; cancel and errors leave it waiting. A decision reaching this MCP
 * session by any path withdraws an open elicitation with `notifications/cancelled`. Late and
 * unknown responses are logged, never refused.
 */
export class ApprovalElicitations {
  readonly #d: ApprovalElicitationsDeps;

  constructor(deps: ApprovalElicitationsDeps) {
    this.#d = deps;
    deps.sql.exec(SCHEMA);
  }

  /** The storage was wiped (the MCP session ended): the table comes back empty. */
  reset(): void {
    this.#d.sql.exec(SCHEMA);
  }

  /** A session event delivered to this MCP session (after its notification went out). */
  onEvent(event: SessionEvent, meta: McpMeta): void {
    switch (event.type) {
      case "approval_request":
        if (meta.canElicit) this.#ask(event, meta.protocolVersion);
        return;
      case "approval_granted":
      case "approval_denied":
      case "approval_expired":
        this.#withdraw(elicitationId(event.session_id, event.request_id), decidedReason(event));
        return;
      default:
        return;
    }
  }

  /** Responses the client POSTed (messages without a method): those to our elicitations are answers. */
  async onResponses(responses: ClientResponse[], principal: CallerPrincipal, meta: McpMeta): Promise<void> {
    for (const response of responses) await this.#onResponse(response, principal, meta);
  }

  #ask(event: ApprovalRequestEvent, protocolVersion: string): void {
    const id = elicitationId(event.session_id, event.request_id);
    const sql = this.#d.sql;
    if (sql.exec("SELECT 1 FROM approval_elicitations WHERE id = ?", id).toArray().length > 0) return;
    const now = Date.now();
    this.#prune(now);
    const deadline = Date.parse(event.deadline);
    const until = (Number.isFinite(deadline) ? deadline : now + FALLBACK_MS) + AFTER_DEADLINE_MS;
    sql.exec(
      "INSERT INTO approval_elicitations (id, session_id, request_id, sent_at, until) VALUES (?, ?, ?, ?, ?)",
      id,
      event.session_id,
      event.request_id,
      now,
      until,
    );
    this.#d.send(
      JSON.stringify({
        jsonrpc: "2.0",
        id,
        method: "elicitation/create",
        params: elicitationParams(event, protocolVersion),
      }),
    );
    this.#d.log().info("approval put to the client as an elicitation", {
      session: event.session_id,
      request: event.request_id,
      kind: event.kind,
    });
  }

  /** Forgets elicitations past their deadline, and the oldest past the bound; the client is told. */
  #prune(now: number): void {
    const sql = this.#d.sql;
    const stale = sql
      .exec("SELECT id FROM approval_elicitations WHERE until < ?", now)
      .toArray()
      .map((r) => String(r.id));
    for (const id of stale) this.#withdraw(id, "already decided: its deadline passed");
    const open = Number(sql.exec("SELECT COUNT(*) AS n FROM approval_elicitations").one().n);
    if (open < MAX_OPEN_ELICITATIONS) return;
    const oldest = sql
      .exec(
        "SELECT id FROM approval_elicitations ORDER BY sent_at, id LIMIT ?",
        open - MAX_OPEN_ELICITATIONS + 1,
      )
      .toArray()
      .map((r) => String(r.id));
    for (const id of oldest) {
      this.#withdraw(
        id,
        "too many approval dialogs open; answer it with approval_response or session pending",
      );
    }
  }

  /** Closes the client's dialog for `id` if it is open here; forgets it. */
  #withdraw(id: string, reason: string): void {
    if (!this.#forget(id)) return;
    this.#d.send(
      JSON.stringify({
        jsonrpc: "2.0",
        method: "notifications/cancelled",
        params: { requestId: id, reason },
      }),
    );
    this.#d.log().info("approval elicitation withdrawn", { elicitation: id, reason });
  }

  /** Deletes the open elicitation `id`; its session and request, or null when it was not open. */
  #forget(id: string): { sessionId: string; requestId: string } | null {
    const sql = this.#d.sql;
    const row = sql
      .exec("SELECT session_id, request_id FROM approval_elicitations WHERE id = ?", id)
      .toArray()[0];
    if (!row) return null;
    sql.exec("DELETE FROM approval_elicitations WHERE id = ?", id);
    return { sessionId: String(row.session_id), requestId: String(row.request_id) };
  }

  async #onResponse(response: ClientResponse, principal: CallerPrincipal, meta: McpMeta): Promise<void> {
    const log = this.#d.log();
    const id = response.id;
    // Forgotten before the answer is awaited: a decision delivered meanwhile withdraws nothing.
    const open = typeof id === "string" ? this.#forget(id) : null;
    if (!open) {
      log.info("response to no open request of this server ignored (late or unknown)", {
        id: clip(String(id ?? null), 200),
      });
      return;
    }
    if ("error" in response) {
      log.info("approval elicitation failed at the client; the approval still waits", {
        elicitation: id,
        code: response.error.code,
        error: clip(response.error.message, 200),
      });
      return;
    }
    const read = readElicitResult(response.result, meta.clientName);
    if (read.kind === "none") {
      log.info("approval elicitation answered nothing; the approval still waits", {
        elicitation: id,
        why: read.why,
      });
      return;
    }
    const fields = { elicitation: id, action: read.action, answer: read.answer, token: principal.tokenId };
    try {
      const answered = await objects.session(this.#d.env, open.sessionId).answerApproval({
        principal,
        requestId: open.requestId,
        answer: read.answer,
        message: read.message,
      });
      if (answered.ok) log.info("approval answered through elicitation", fields);
      else
        log.warn("approval answer through elicitation refused", {
          ...fields,
          code: answered.error.code,
          error: clip(answered.error.message, 300),
        });
      // A decision made outside the tools: audited here, as approval_response is by dispatch.
      await objects
        .audit(this.#d.env)
        .record({
          at: Date.now(),
          token_id: principal.tokenId,
          action: `elicitation approval_response ${read.answer}`,
          target: `${open.sessionId}/${open.requestId}`,
          outcome: answered.ok ? "ok" : answered.error.code,
        })
        .catch((err: unknown) =>
          log.error("could not write the audit log", { ...fields, error: errorMessage(err) }),
        );
    } catch (err) {
      log.warn("approval answer through elicitation failed", { ...fields, error: errorMessage(err) });
    }
  }
}
