/**
 * The Worker's variables for its local server (scripts/stack/wrangler-dev-main.ts): written to a
 * file only the owner can read, because `--var NAME:VALUE` arguments (tokens among them) are
 * visible to every local user through `ps`. The format is a dotenv file that `wrangler dev
 * --env-file` reads back unaltered too.
 */
import { rm, writeFile } from "node:fs/promises";

const NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

/** A variable that cannot be written to a dotenv file without changing its value. */
export class EnvFileError extends Error {
  readonly code = "env_file";
  constructor(message: string) {
    super(message);
    this.name = "EnvFileError";
  }
}

/**
 * The dotenv text for `vars`, read back exactly by wrangler (dotenv, then dotenv-expand).
 * Values are single-quoted (no escape processing) with `$` escaped as `\$`, which dotenv-expand
 * turns back into `$` instead of expanding a variable. A single quote, a line break or a trailing
 * backslash cannot be expressed that way, so those are refused rather than passed altered.
 */
export function formatEnvFile(vars: Record<string, string>): string {
  const lines: string[] = [];
  for (const [name, value] of Object.entries(vars)) {
    if (!NAME.test(name)) throw new EnvFileError(`${JSON.stringify(name)} is not a valid variable name`);
    if (/['\r\n]/.test(value) || value.endsWith("\\"))
      throw new EnvFileError(`${name} has a quote, a line break or a trailing backslash; not supported`);
    lines.push(`${name}='${value.replaceAll("$", "\\$")}'`);
  }
  return `${lines.join("\n")}\n`;
}

/** Writes `vars` to a fresh file at `path` with mode 0600 (an old file is replaced, not reused). */
export async function writeEnvFile(path: string, vars: Record<string, string>): Promise<void> {
  const text = formatEnvFile(vars);
  // `mode` applies only when the file is created: remove any old one, then create exclusively.
  await rm(path, { force: true });
  await writeFile(path, text, { mode: 0o600, flag: "wx" });
}

/** The variables of a file `formatEnvFile` wrote (its exact inverse); a line it cannot write is refused. */
export function parseEnvFile(text: string): Record<string, string> {
  const vars: Record<string, string> = {};
  for (const [index, line] of text.split("\n").entries()) {
    if (line === "") continue;
    const match = /^([A-Za-z_][A-Za-z0-9_]*)='([^'\r]*)'$/.exec(line);
    // Its text is not quoted back: a value may be a token.
    if (!match?.[1] || match[2] === undefined)
      throw new EnvFileError(`line ${index + 1} is not NAME='value'`);
    vars[match[1]] = match[2].replaceAll("\\$", "$");
  }
  return vars;
}
