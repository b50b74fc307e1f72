/**
 * The Worker's layers: the MCP endpoint (mcp/, and the routes) serves the tool catalogue
 * (tools/), the tools run use cases (flows/) over the Durable Objects, and the objects sit below.
 * Arrows run down only: no module below the catalogue imports tools/ or the MCP endpoint, not
 * even through a chain of imports at run time (type-only imports end a chain: env.ts types every
 * object's binding); the objects get the catalogue through flows/catalog.ts.
 */
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { describe, expect, it } from "vitest";

const SRC = resolve(import.meta.dirname, "../../worker/src");
/** Folders below the catalogue. */
const LOWER = [
  "flows",
  "session",
  "hosts",
  "jobs",
  "schedules",
  "projects",
  "tokens",
  "audit",
  "pending",
  "objects",
  "auth",
  "streams",
];
/** Folders of the layers above them. */
const UPPER = ["tools", "mcp"];

const IMPORT = /(?:import|export)\s([^"']*?)from\s+["']([^"']+)["']/g;

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return sourceFiles(path);
    return entry.name.endsWith(".ts") ? [path] : [];
  });
}

/** The worker modules `file` imports; with `runtime`, only those it needs at run time. */
function importsOf(file: string, runtime: boolean): string[] {
  const text = readFileSync(file, "utf8");
  return [...text.matchAll(IMPORT)]
    .filter((m) => !runtime || !/^(import|export)\s+type\s/.test(m[0]))
    .map((m) => m[2] ?? "")
    .filter((spec) => spec.startsWith("."))
    .map((spec) => resolve(dirname(file), spec.replace(/\.js$/, ".ts")))
    .filter((path) => path.startsWith(SRC) && existsSync(path));
}

/** The first chain of imports from `file` into an upper layer, or null (the first step may be type-only). */
function pathUp(file: string, seen = new Set<string>(), first = true): string[] | null {
  if (seen.has(file)) return null;
  seen.add(file);
  for (const next of importsOf(file, !first)) {
    const top = relative(SRC, next).split("/")[0] ?? "";
    if (UPPER.includes(top)) return [next];
    const rest = pathUp(next, seen, false);
    if (rest) return [next, ...rest];
  }
  return null;
}

describe("worker layers", () => {
  const lower = LOWER.flatMap((folder) => sourceFiles(join(SRC, folder)));

  it("finds the lower layers' modules", () => {
    expect(lower.length).toBeGreaterThan(50);
    expect(lower.some((f) => f.endsWith("session/session-do.ts"))).toBe(true);
  });

  it.each(LOWER)("%s/ reaches neither tools/ nor mcp/, directly or through other modules", (folder) => {
    const offenders = sourceFiles(join(SRC, folder))
      .map((file) => ({ file, path: pathUp(file) }))
      .filter((x) => x.path !== null)
      .map((x) => [x.file, ...(x.path ?? [])].map((p) => relative(SRC, p)).join(" → "));
    expect(offenders).toEqual([]);
  });
});
