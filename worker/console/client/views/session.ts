import { canWrite } from "../access.js";
import { callObject } from "../api.js";
import { h, labelled, replace } from "../dom.js";
import { errorSlot, guarded, messageOf } from "../errors.js";
import { parseEventLine, type SessionEventLine, touchesPending } from "../events.js";
import { clock, dash, usd } from "../format.js";
import type { JsonRecord } from "../json.js";
import type { Scope, StreamState } from "../live.js";
import { isLive, parseInfo, type SessionInfo } from "../models.js";
import { heading, type View } from "../view.js";
import { pendingSection } from "./pending.js";
import { networkSection } from "./session-network.js";
import { setupSection } from "./session-setup.js";

const INFO_REFRESH_MS = 3_000;
/** Lines kept in the page; older ones go first (the session's log keeps them all). */
const MAX_EVENT_LINES = 5_000;

function statusText(info: SessionInfo): string {
  return [
    `Status: ${info.status}`,
    `Agent: ${dash(info.agent)}`,
    `Model: ${dash(info.model)}`,
    `Host: ${dash(info.host_id)}`,
    info.cost_usd !== null ? `Cost: ${usd(info.cost_usd)}` : null,
  ]
    .filter((part) => part !== null)
    .join(" · ");
}

/** Message, Interrupt and End session: for people who may write the session's project. */
function controls(sessionId: string, onChange: () => void): HTMLElement {
  const slot = errorSlot();
  const messageSlot = errorSlot();
  const message = h("textarea", { rows: 3 });
  const send = h("button", { type: "submit" }, "Send");
  const form = h(
    "form",
    { class: "stack" },
    labelled("Message", message),
    h("div", { class: "actions" }, send),
    messageSlot.el,
  );
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    if (message.value.trim() === "") return;
    const text = message.value;
    void guarded(messageSlot, async () => {
      await callObject("session", { action: "message", session_id: sessionId, message: text });
      message.value = "";
    }, [send]);
  });
  const interrupt = h("button", { type: "button" }, "Interrupt");
  const end = h("button", { type: "button", class: "danger" }, "End session");
  for (const [control, action] of [
    [interrupt, "interrupt"],
    [end, "end"],
  ] as const) {
    control.addEventListener("click", () => {
      void guarded(slot, async () => {
        await callObject("session", { action, session_id: sessionId });
        onChange();
      }, [control]);
    });
  }
  return h("section", { class: "controls" }, form, h("div", { class: "actions" }, interrupt, end), slot.el);
}

/** The live event list: one line per event, each shown once however often the stream replays. */
function eventList(scope: Scope, sessionId: string, onEvent: (line: SessionEventLine) => void): HTMLElement {
  const ol = h("ol", { "aria-label": "Events", class: "events" });
  const wrap = h("div", { class: "events-wrap" }, ol);
  const state = h("p", { class: "muted" }, "Connecting…");
  let highest = -1;
  const labels: Record<StreamState, string> = {
    open: "Live.",
    reconnecting: "Connection lost; resuming…",
    closed: "The event stream closed; trying again…",
  };
  scope.stream(
    `/console/api/sessions/${encodeURIComponent(sessionId)}/events`,
    (data) => {
      const line = parseEventLine(data);
      if (line === null || line.position <= highest) return;
      highest = line.position;
      const follow = wrap.scrollTop + wrap.clientHeight >= wrap.scrollHeight - 24;
      const time = h("span", { class: "event-time" }, clock(line.at));
      const attrs = { class: `event event-${line.type}` };
      ol.append(
        line.detail === undefined
          ? h("li", attrs, time, " ", line.text)
          : // Long text (a setup step's output) is folded under its line.
            h(
              "li",
              attrs,
              h("details", {}, h("summary", {}, time, " ", line.text), h("pre", {}, line.detail)),
            ),
      );
      while (ol.childElementCount > MAX_EVENT_LINES) ol.firstElementChild?.remove();
      if (follow) wrap.scrollTop = wrap.scrollHeight;
      onEvent(line);
    },
    (s) => replace(state, labels[s]),
  );
  return h("section", {}, h("h2", {}, "Events"), state, wrap);
}

/** One session: its status, its controls, what waits for an answer, its setup, its live events and its network. */
export const sessionView: View = ({ root, scope }, sessionId = "") => {
  const status = h("p", { role: "status", "aria-label": "Session status", class: "status-line" }, "Loading…");
  const errors = errorSlot();
  root.append(heading(`Session ${sessionId}`), status, errors.el);

  let built = false;
  let controlsEl: HTMLElement | null = null;
  const network = networkSection();
  const setup = setupSection();
  const info = scope.every(INFO_REFRESH_MS, async () => {
    let answer: JsonRecord;
    try {
      answer = await callObject("session", { action: "get", session_id: sessionId });
    } catch (err) {
      if (!scope.disposed) errors.show(messageOf(err));
      return;
    }
    const current = parseInfo(answer);
    if (current === null || scope.disposed) return;
    errors.clear();
    replace(status, statusText(current));
    network.update(answer);
    // An ended session takes no more messages: its controls go.
    if (!isLive(current.status)) controlsEl?.remove();
    if (built) return;
    // The rest needs the session's project (who may write it), known from the first answer.
    built = true;
    const writable = canWrite(current.project_id);
    const pending = pendingSection(scope, sessionId, writable);
    if (writable && isLive(current.status)) {
      controlsEl = controls(sessionId, () => info.poke());
      root.append(controlsEl);
    }
    root.append(
      h("p", {}, "Project: ", h("a", { href: `#/projects/${current.project_id}` }, current.project_id)),
      pending.el,
      setup.el,
      eventList(scope, sessionId, (line) => {
        if (touchesPending(line.type)) pending.poke();
        if (line.type === "session_ended" || line.type === "droid_status" || line.type === "network_blocked")
          info.poke();
        setup.event(line);
        network.event(line);
      }),
      network.el,
    );
  });
};
