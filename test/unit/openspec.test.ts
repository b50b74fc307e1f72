import { describe, expect, it } from "vitest";
import { parseTasks, progress } from "../../worker/src/projects/openspec.js";

describe("parseTasks", () => {
  it("reads numbered tasks, their state and their section", () => {
    const md = [
      "# Tasks",
      "## 1. Schema",
      "- [x] 1.1 Add the table",
      "- [ ] 1.2 Migrate old rows",
      "",
      "## 2. API",
      "* [X] 2.1 Expose it",
      "- [ ] Write docs",
      "- not a task",
      "  - [ ] 2.2 Nested one",
    ].join("\n");
    const tasks = parseTasks(md);
    expect(tasks).toEqual([
      { id: "1.1", text: "Add the table", done: true, section: "1. Schema" },
      { id: "1.2", text: "Migrate old rows", done: false, section: "1. Schema" },
      { id: "2.1", text: "Expose it", done: true, section: "2. API" },
      { id: null, text: "Write docs", done: false, section: "2. API" },
      { id: "2.2", text: "Nested one", done: false, section: "2. API" },
    ]);
    expect(progress(tasks)).toEqual({ done: 2, total: 5 });
  });

  it("finds nothing in a file without checkboxes", () => {
    expect(parseTasks("# Plan\nJust prose.\r\n")).toEqual([]);
  });
});
