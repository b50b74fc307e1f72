/**
 * A 2026-07-28 caller for end-to-end tests: the official MCP SDK v2 client pinned to the stateless
 * revision (`server/discover` at connect, the per-request envelope and standard headers, and
 * `Mcp-Param-*` mirrored from the `x-mcp-header` marks of `tools/list`). There is no MCP session
 * and no stream to be told about events on, so it follows a droid session one of two ways:
 * - `poll`: `session events` from index 0 with `wait_seconds` (a long poll), as the server's
 *   instructions tell a stateless client to;
 * - `listen`: `subscriptions/listen` on the session's resource `oubliette://sessions/{id}`, each
 *   event arriving as `notifications/resources/updated` with the event in `_meta`.
 * Like TestCaller it collects the events, drives the scripted droid and may answer caller tool
 * requests; it also records what each request it sent carried (to check the headers).
 */
import {
  type CallToolResult,
  Client,
  type ElicitResult,
  type McpSubscription,
  StreamableHTTPClientTransport,
} from "@modelcontextprotocol/client";
import { z } from "zod";
import { SessionEventSchema } from "../../protocol/events.js";
import { SessionFollower } from "./session-follower.js";

export const MODERN_PIN = "2026-07-28";
/** Where a session update carries its event (the server's `_meta` key). */
export const EVENT_META = "oubliette/event";

export type Feed = "poll" | "listen";

/** What one POST of the client carried, and the HTTP status it got. */
export interface SentRequest {
  method: string | null;
  tool: string | null;
  /** `arguments.project_id` of a tools/call, if any. */
  projectId: unknown;
  /** The `Mcp-Param-Project-Id` header, if sent. */
  paramProjectId: string | null;
  status: number;
}

const SentBodySchema = z.looseObject({
  params: z
    .looseObject({
      name: z.string().optional(),
      arguments: z.looseObject({ project_id: z.unknown().optional() }).optional(),
    })
    .optional(),
});

const EventsPageSchema = z.looseObject({
  events: z.array(z.unknown()),
  next_index: z.number().int(),
  status: z.string(),
});

export class ModernCaller extends SessionFollower {
  /** Event payloads that did not parse as session events (there should be none). */
  readonly malformed: unknown[] = [];
  /** What the server asked this caller's human (elicitation messages), in order. */
  readonly asked: string[] = [];
  /** Errors of listen subscriptions that could not be opened. */
  readonly feedErrors: unknown[] = [];
  readonly #following = new Set<string>();
  readonly #subscriptions: McpSubscription[] = [];

  private constructor(
    readonly client: Client,
    readonly feed: Feed,
    /** Every POST the client sent, in order. */
    readonly sent: SentRequest[],
  ) {
    super();
  }

  /** Connects pinned to 2026-07-28 with `token`; throws if the server does not offer it. */
  static async connect(
    mcpUrl: URL,
    token: string,
    options: {
      name?: string;
      feed?: Feed;
      /**
       * Declares `elicitation` and answers the server's input requests (input-required rounds,
       * which the SDK fulfils by itself) with this; records each message asked.
       */
      elicit?: (message: string) => ElicitResult;
    } = {},
  ): Promise<ModernCaller> {
    const sent: SentRequest[] = [];
    const transport = new StreamableHTTPClientTransport(mcpUrl, {
      requestInit: { headers: { authorization: `Bearer ${token}` } },
      fetch: async (url, init) => {
        const response = await fetch(url, init);
        sent.push(sentRequest(init, response.status));
        return response;
      },
    });
    const client = new Client(
      { name: options.name ?? "test-caller-2026", version: "1.0.0" },
      {
        versionNegotiation: { mode: { pin: MODERN_PIN } },
        ...(options.elicit ? { capabilities: { elicitation: { form: {} } } } : {}),
      },
    );
    const elicit = options.elicit;
    if (elicit) {
      client.setRequestHandler("elicitation/create", async (request) => {
        const message = "message" in request.params ? request.params.message : "";
        caller.asked.push(message);
        return elicit(message);
      });
    }
    const caller = new ModernCaller(client, options.feed ?? "poll", sent);
    client.setNotificationHandler("notifications/resources/updated", (notification) => {
      caller.receiveRaw(notification.params._meta?.[EVENT_META]);
    });
    await client.connect(transport);
    // As a client lists tools before calling them: the listing's `x-mcp-header` marks are what
    // the client mirrors into `Mcp-Param-*` headers (without it, a first call is refused -32020
    // and the SDK lists and retries).
    await client.listTools();
    return caller;
  }

  async call(name: string, args: Record<string, unknown>): Promise<CallToolResult> {
    return this.client.callTool({ name, arguments: args });
  }

  /** Starts collecting a session's events from its first, by this caller's feed. */
  follow(sessionId: string): void {
    if (this.#following.has(sessionId)) return;
    this.#following.add(sessionId);
    if (this.feed === "poll") void this.#poll(sessionId);
    else
      void this.client
        .listen({ resourceSubscriptions: [`oubliette://sessions/${sessionId}`] })
        .then((subscription) => this.#subscriptions.push(subscription))
        .catch((err: unknown) => this.feedErrors.push(err));
  }

  /** Stops the feeds and closes the client. */
  async close(): Promise<void> {
    this.closed = true;
    await Promise.all(this.#subscriptions.map((s) => s.close().catch(() => {})));
    await this.client.close();
  }

  #poll(sessionId: string): Promise<void> {
    return this.poll(async (since) => {
      const args = {
        action: "events",
        session_id: sessionId,
        since_index: since,
        wait_seconds: 20,
        limit: 1000,
      };
      const result = await this.call("session", args);
      const page = result.isError ? null : EventsPageSchema.safeParse(result.structuredContent);
      return page?.success ? page.data : null;
    });
  }

  /** An event from the wire, checked against the schema (one that does not parse is kept aside). */
  protected override receiveRaw(raw: unknown): void {
    const parsed = SessionEventSchema.safeParse(raw);
    if (parsed.success) this.receive(parsed.data);
    else this.malformed.push(raw);
  }
}

function sentRequest(init: RequestInit | undefined, status: number): SentRequest {
  const headers = new Headers(init?.headers);
  const body =
    typeof init?.body === "string" ? SentBodySchema.safeParse(JSON.parse(init.body) as unknown) : null;
  const params = body?.success ? body.data.params : undefined;
  return {
    method: headers.get("mcp-method"),
    tool: params?.name ?? null,
    projectId: params?.arguments?.project_id,
    paramProjectId: headers.get("mcp-param-project-id"),
    status,
  };
}
