/**
 * The `.dev.vars` file of `npm start`: the admin and host tokens (created when missing, so that an
 * MCP client configured once keeps working across restarts) and any other Worker variable the
 * user put there. wrangler no longer reads the file itself (it gets `--env-file`), so every
 * variable in it is passed on.
 */
import { existsSync } from "node:fs";
import { readFile, writeFile } from "node:fs/promises";
import { z } from "zod";
import { newToken } from "./tokens.js";

// A token goes into a dotenv file and an Authorization header: printable, no quotes or `$`.
const TokenSchema = z
  .string()
  .regex(/^[\x21-\x7e]{8,}$/)
  .refine((t) => !/['"\\$#]/.test(t));

export interface DevVars {
  admin: string;
  host: string;
  /** Every variable of the file, the tokens included. */
  vars: Record<string, string>;
}

/**
 * Parses dotenv lines as wrangler reads `.dev.vars`: `NAME=value`, optionally `export`ed,
 * single- or double-quoted, `#` comments. (No multi-line values.)
 */
export function parseDevVars(text: string): Record<string, string> {
  const vars: Record<string, string> = {};
  for (const raw of text.split(/\r?\n/)) {
    const match = /^\s*(?:export\s+)?([A-Za-z_][A-Za-z0-9_.-]*)\s*=\s*(.*)$/.exec(raw);
    if (!match?.[1]) continue;
    const value = (match[2] ?? "").trim();
    const quoted = /^(['"`])(.*)\1$/.exec(value);
    vars[match[1]] = quoted ? (quoted[2] ?? "") : value.replace(/\s+#.*$/, "");
  }
  return vars;
}

/** Reads `file`, adding whichever token is missing. */
export async function readDevVars(file: string): Promise<DevVars> {
  const text = existsSync(file) ? await readFile(file, "utf8") : "";
  const vars = parseDevVars(text);
  const token = (name: string): string | undefined => {
    const value = vars[name];
    if (!value) return undefined;
    if (!TokenSchema.safeParse(value).success)
      throw new Error(`${file}: ${name} is not a usable token; remove the line to get a new one`);
    return value;
  };
  const stored = { admin: token("OUBLIETTE_ADMIN_TOKEN"), host: token("OUBLIETTE_HOST_TOKEN") };
  const admin = stored.admin ?? newToken();
  const host = stored.host ?? newToken();
  if (!stored.admin || !stored.host) {
    const kept = text.split("\n").filter((l) => l.trim() && !/^OUBLIETTE_(ADMIN|HOST)_TOKEN=/.test(l));
    const lines = [...kept, `OUBLIETTE_ADMIN_TOKEN=${admin}`, `OUBLIETTE_HOST_TOKEN=${host}`];
    await writeFile(file, `${lines.join("\n")}\n`, { mode: 0o600 });
  }
  return { admin, host, vars: { ...vars, OUBLIETTE_ADMIN_TOKEN: admin, OUBLIETTE_HOST_TOKEN: host } };
}
