/**
 * `session events` with `include_children`: the session's own page of events merged with its
 * children's (the sessions its droid started), oldest first by time; every event names its
 * session (`session_id`), and each child keeps its own position (`children_next_index`, passed
 * back as `children_since`). Children are read as they are, without waiting.
 */
import { type Result, unwrap } from "../errors.js";
import type { EventsPage, Via } from "../session/types.js";
import type { ToolContext } from "./context.js";
import { sessionStub } from "./session-spawn.js";

export interface MergedEventsPage extends EventsPage {
  children_next_index: Record<string, number>;
}

export async function withChildEvents(
  ctx: ToolContext,
  sessionId: string,
  own: EventsPage,
  options: { limit: number; childrenSince: Record<string, number>; via: Via | null },
): Promise<MergedEventsPage> {
  const info = unwrap(await sessionStub(ctx, sessionId).getInfo(ctx.principal, options.via));
  const pages = await Promise.all(
    info.children.map(async (child) => {
      const since = options.childrenSince[child] ?? 0;
      // The RPC stub's type of a page is too deep to infer; it is the session object's EventsPage.
      const read = (await sessionStub(ctx, child).readEvents(
        ctx.principal,
        since,
        options.limit,
        null,
        0,
      )) as Result<EventsPage>;
      const page = unwrap(read);
      return [child, page] as const;
    }),
  );
  const events = [...own.events, ...pages.flatMap(([, page]) => page.events)].sort((a, b) =>
    String(a.ts ?? "").localeCompare(String(b.ts ?? "")),
  );
  return {
    ...own,
    events,
    children_next_index: Object.fromEntries(pages.map(([child, page]) => [child, page.next_index])),
  };
}
