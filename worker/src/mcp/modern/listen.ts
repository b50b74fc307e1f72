import { z } from "zod";
import { stillValid } from "../../auth/tokens.js";
import { config } from "../../env.js";
import { isLive } from "../../session/session-record.js";
import { TOKEN_RECHECK_MS } from "../../session/subscriber-sockets.js";
import { SSE_HEADERS, SseStream } from "../../streams/sse.js";
import { McpErrorCode, RpcError } from "../json-rpc.js";
import { SERVER_INFO } from "../server-info.js";
import { MetaKey } from "./envelope.js";
import type { ModernCall, ModernMethod } from "./method.js";
import { type FeedEvent, SessionFeed } from "./session-feed.js";
import { parseSessionUri, readableSession } from "./session-resources.js";

/** The `_meta` keys a session update carries: the event itself, and its index (to resume with `?since=`). */
export const EVENT_META = "oubliette/event";
export const INDEX_META = "oubliette/index";

/** Most session URIs one listen follows (each holds one stream to its session's object). */
export const MAX_SUBSCRIPTIONS = 16;

const FilterSchema = z.looseObject({
  toolsListChanged: z.boolean().optional(),
  promptsListChanged: z.boolean().optional(),
  resourcesListChanged: z.boolean().optional(),
  resourceSubscriptions: z.array(z.string().max(2048)).max(MAX_SUBSCRIPTIONS).optional(),
});
const ListenParamsSchema = z.looseObject({ notifications: FilterSchema });

/** One honoured subscription: the URI as the client gave it, and its session's events. */
interface Follow {
  uri: string;
  /** null: the session ended before the first index asked for; there is nothing left to send. */
  feed: SessionFeed | null;
  /** The next index to relay (an event before it was relayed already, or not asked for). */
  next: number;
}

type Ending = "ended" | "broken";

/**
 * `subscriptions/listen` (2026-07-28): one POST answered by a long-lived SSE stream. The filter
 * is honoured only for `resourceSubscriptions` naming a session this token may read (others are
 * dropped from the acknowledgement, so that whether they exist is not told); the list-changed
 * kinds never are (the catalogue does not change while deployed). Every event of a followed
 * session becomes `notifications/resources/updated` for the URI as subscribed, carrying the
 * event and its index; `?since=<index>` on a URI replays from that index, the whole log without
 * it. Nothing is kept between requests: all the fan-in happens inside this one.
 *
 * The stream ends when the client leaves (the session streams are closed then), when the token is
 * revoked, abruptly when a session stream breaks (resume with `?since=`), and with the
 * completion result once every followed session has ended.
 */
export const subscriptionsListen: ModernMethod = {
  async stream(call) {
    const parsed = ListenParamsSchema.safeParse(call.params);
    if (!parsed.success) {
      throw new RpcError(
        McpErrorCode.invalidParams,
        `subscriptions/listen needs params.notifications, with at most ${MAX_SUBSCRIPTIONS} resourceSubscriptions URIs`,
      );
    }
    const asked = parsed.data.notifications.resourceSubscriptions;
    const settled = await Promise.allSettled([...new Set(asked ?? [])].map((uri) => follow(call, uri)));
    const follows = settled.flatMap((s) => (s.status === "fulfilled" && s.value !== null ? [s.value] : []));
    const failure = settled.find((s) => s.status === "rejected");
    if (failure) {
      for (const f of follows) f.feed?.cancel();
      throw failure.reason;
    }
    return listen(call, follows, asked !== undefined);
  },
};

/** Opens one subscription, or null when the URI names no session this token may read. */
async function follow(call: ModernCall, uri: string): Promise<Follow | null> {
  const target = parseSessionUri(uri);
  if (target === null) return null;
  const info = await readableSession(call.env, call.principal, target.sessionId);
  if (!info) return null;
  const since = target.since ?? 0;
  if (!isLive(info.status) && since >= info.next_index) return { uri, feed: null, next: since };
  const feed = await SessionFeed.open(call.env, call.principal, target.sessionId, since, call.log);
  return feed && { uri, feed, next: since };
}

/** The listen stream: the acknowledgement, then the followed sessions' events, with keep-alives and token checks. */
function listen(call: ModernCall, follows: Follow[], askedResources: boolean): Response {
  const tag = { [MetaKey.subscriptionId]: call.id };
  let closed: () => void = () => {};
  const gone = new Promise<void>((resolve) => {
    closed = resolve;
  });
  const stream = new SseStream(() => {
    for (const f of follows) f.feed?.cancel();
    closed();
  });
  const send = (message: Record<string, unknown>) =>
    stream.event(JSON.stringify({ jsonrpc: "2.0", ...message }));
  const honoured = askedResources ? { resourceSubscriptions: follows.map((f) => f.uri) } : {};
  send({
    method: "notifications/subscriptions/acknowledged",
    params: { _meta: tag, notifications: honoured },
  });
  const update = (uri: string, e: FeedEvent) =>
    send({
      method: "notifications/resources/updated",
      params: { uri, _meta: { ...tag, [EVENT_META]: e.event, [INDEX_META]: e.index } },
    });
  stream.keepAlive(config(call.env).keepAliveMs);
  if (call.principal.issued) stream.watch(() => stillValid(call.env, call.principal), TOKEN_RECHECK_MS);
  // A Worker's work stops when its client leaves unless waited for: this request must live on to
  // notice (a write fails) and close the session streams it holds.
  call.waitUntil(gone);
  if (follows.length > 0) {
    const relays = follows.map((f) =>
      relay(f, update).then((ending) => {
        // A session stream broke (its object restarted, the token was revoked): end abruptly,
        // so that the client resumes from its last index.
        if (ending === "broken") stream.close();
        return ending;
      }),
    );
    call.waitUntil(
      Promise.all(relays).then(() => {
        if (stream.dead) return;
        send({
          id: call.id,
          result: { resultType: "complete", _meta: { ...tag, [MetaKey.serverInfo]: SERVER_INFO } },
        });
        stream.close();
      }),
    );
  }
  return new Response(stream.readable, { headers: SSE_HEADERS });
}

/** Relays one session's events from `follow.next` on, each once, until the session ends or its stream does. */
async function relay(follow: Follow, update: (uri: string, e: FeedEvent) => void): Promise<Ending> {
  if (follow.feed === null) return "ended";
  for await (const e of follow.feed.events()) {
    if (e.index < follow.next) continue;
    follow.next = e.index + 1;
    update(follow.uri, e);
    if (e.type === "session_ended") {
      follow.feed.cancel();
      return "ended";
    }
  }
  return "broken";
}
