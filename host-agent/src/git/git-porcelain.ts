/**
 * Reading what git printed in a container: `status --porcelain=v1 -z --branch` and
 * `diff --name-status -z`. The output is the agent's to shape (its repository, its git), so
 * it is read as untrusted text: bounded, never evaluated, anything unexpected skipped.
 */
import type { GitFileChange } from "../../../protocol/tunnel-git.js";

/** Most files a status or a diff lists. */
export const MAX_LISTED_FILES = 2_000;

export interface ParsedStatus {
  branch: string | null;
  files: GitFileChange[];
  truncated: boolean;
}

/** `git status --porcelain=v1 -z --branch`: a `## ` header, then `XY path` (renames: `XY to\0from`). */
export function parseStatus(out: string): ParsedStatus {
  const fields = out.split("\0");
  let branch: string | null = null;
  const files: GitFileChange[] = [];
  let truncated = false;
  for (let i = 0; i < fields.length; i++) {
    const field = fields[i] as string;
    if (field === "") continue;
    if (field.startsWith("## ")) {
      branch = headerBranch(field.slice(3));
      continue;
    }
    if (field.length < 4 || field[2] !== " ") continue;
    const status = field.slice(0, 2);
    const path = field.slice(3);
    const renamed = status.includes("R") || status.includes("C");
    const from = renamed ? fields[++i] : undefined;
    if (files.length >= MAX_LISTED_FILES) {
      truncated = true;
      continue;
    }
    files.push({ path, status, ...(from !== undefined && from !== "" ? { from } : {}) });
  }
  return { branch, files, truncated };
}

/** The branch of a `## ` header: `main...origin/main [ahead 1]`, `No commits yet on main`, `HEAD (no branch)`. */
function headerBranch(header: string): string | null {
  const noCommits = /^(?:No commits yet|Initial commit) on (.+)$/.exec(header);
  if (noCommits) return noCommits[1] ?? null;
  if (header.startsWith("HEAD (no branch)")) return null;
  const name = header.split("...")[0]?.split(" ")[0] ?? "";
  return name === "" ? null : name;
}

/** `git diff --name-status -z`: `S\0path` (renames and copies: `R100\0from\0to`). */
export function parseNameStatus(out: string): { files: GitFileChange[]; truncated: boolean } {
  const fields = out.split("\0");
  const files: GitFileChange[] = [];
  let truncated = false;
  for (let i = 0; i < fields.length; i++) {
    const code = fields[i] as string;
    if (code === "") continue;
    const letter = code[0] as string;
    if (!/^[ACDMRTUX]$/.test(letter)) continue;
    const twoPaths = letter === "R" || letter === "C";
    const first = fields[++i];
    const second = twoPaths ? fields[++i] : undefined;
    if (first === undefined || (twoPaths && second === undefined)) break;
    if (files.length >= MAX_LISTED_FILES) {
      truncated = true;
      continue;
    }
    files.push(
      twoPaths ? { path: second as string, from: first, status: letter } : { path: first, status: letter },
    );
  }
  return { files, truncated };
}
