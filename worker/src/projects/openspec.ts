/**
 * OpenSpec in a workspace: `openspec/changes/<change>/` holds a change's proposal and its
 * `tasks.md`, a Markdown checklist (`## 1. Section`, `- [ ] 1.1 Task`, `- [x] …` when done);
 * finished changes move to `openspec/changes/archive/`.
 */
export const CHANGES_DIR = "openspec/changes";
export const ARCHIVE = "archive";

export interface OpenSpecTask {
  /** The task's number when it has one (`1.2`), else null. */
  id: string | null;
  text: string;
  done: boolean;
  section: string | null;
}

const HEADING = /^#{1,6}\s+(.*\S)\s*$/;
const TASK = /^\s*[-*]\s+\[( |x|X)\]\s+(.*\S)\s*$/;
const NUMBERED = /^(\d+(?:\.\d+)*)\.?\s+(.*)$/;

/** The tasks of a tasks.md, in order, with the section each is under. */
export function parseTasks(markdown: string): OpenSpecTask[] {
  const tasks: OpenSpecTask[] = [];
  let section: string | null = null;
  for (const line of markdown.split(/\r?\n/)) {
    const heading = HEADING.exec(line);
    if (heading?.[1] !== undefined) {
      section = heading[1];
      continue;
    }
    const task = TASK.exec(line);
    if (!task || task[2] === undefined) continue;
    const numbered = NUMBERED.exec(task[2]);
    tasks.push({
      id: numbered?.[1] ?? null,
      text: numbered?.[2] ?? task[2],
      done: task[1] !== " ",
      section,
    });
  }
  return tasks;
}

/** How far a change is: tasks done of all. */
export function progress(tasks: readonly OpenSpecTask[]): { done: number; total: number } {
  return { done: tasks.filter((t) => t.done).length, total: tasks.length };
}
