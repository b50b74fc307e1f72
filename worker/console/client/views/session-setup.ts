import { h, replace } from "../dom.js";
import type { SessionEventLine } from "../events.js";
import { num, str, strings } from "../json.js";

/**
 * A session's workspace setup on its page, gathered from its `setup_*` events: the steps in
 * order, each with its output folded under it, and how the setup ended. Hidden until a setup
 * starts; the output is the commands' own (untrusted) text, shown as text.
 */
export interface SetupSection {
  readonly el: HTMLElement;
  event(line: SessionEventLine): void;
}

interface Step {
  state: HTMLElement;
  output: HTMLPreElement;
  summary: HTMLElement;
  lines: number;
}

/** Output kept per step on the page (the session's events keep it all). */
const MAX_STEP_OUTPUT = 256 * 1024;

export function setupSection(): SetupSection {
  const outcome = h("p", { role: "status", class: "status-line" });
  const list = h("ol", { "aria-label": "Setup steps", class: "setup-steps" });
  const el = h("section", { "aria-label": "Setup", hidden: true }, h("h2", {}, "Setup"), outcome, list);
  let steps: Step[] = [];

  const setState = (index: number, text: string) => {
    const step = steps[index];
    if (step) step.state.textContent = text;
  };

  const started = (commands: string[], workspace: string) => {
    el.hidden = false;
    replace(outcome, `Running ${commands.length} step(s) in workspace ${workspace}…`);
    replace(list);
    steps = commands.map((command) => {
      const state = h("span", { class: "muted" }, "waiting");
      const summary = h("summary", {}, "Output");
      const output = h("pre", {});
      list.append(h("li", {}, h("code", {}, command), " — ", state, h("details", {}, summary, output)));
      return { state, output, summary, lines: 0 };
    });
  };

  const output = (index: number, text: string) => {
    const step = steps[index];
    if (!step) return;
    for (let i = 0; i < index; i += 1) if (steps[i]?.state.textContent === "running") setState(i, "done");
    if (step.state.textContent === "waiting") setState(index, "running");
    if ((step.output.textContent?.length ?? 0) < MAX_STEP_OUTPUT) step.output.append(text);
    step.lines += text.split("\n").filter(Boolean).length;
    step.summary.textContent = `Output (${step.lines} line(s))`;
  };

  const finished = (line: SessionEventLine) => {
    const e = line.event;
    const ok = str(e, "status") === "ok";
    const failedAt = num(e, "step");
    steps.forEach((_, i) => {
      if (ok || failedAt === null || i < failedAt) setState(i, "done");
      else if (i === failedAt)
        setState(
          i,
          e.exit_code === null ? "failed: killed or timed out" : `failed: exit ${num(e, "exit_code") ?? "?"}`,
        );
      else setState(i, "not run");
    });
    el.hidden = false;
    replace(outcome, line.text);
  };

  return {
    el,
    event(line) {
      const e = line.event;
      if (line.type === "setup_started") started(strings(e, "steps"), str(e, "workspace_id") ?? "?");
      else if (line.type === "setup_output") output(num(e, "step") ?? -1, str(e, "text") ?? "");
      else if (line.type === "setup_finished") finished(line);
    },
  };
}
