/**
 * Writing values into systemd's files so that systemd reads back exactly what was meant
 * (systemd.syntax(7), systemd.service(5) "Command lines", systemd.exec(5) `EnvironmentFile=`).
 * Each setting has its own rules: a command line is split into words, unquoted and C-unescaped,
 * with `%` specifiers and `$` variables expanded; a path list is split and unquoted but has no
 * variables; most other settings take the rest of the line verbatim (specifiers still expanded).
 * Anything that cannot be said safely is refused rather than guessed at.
 */
import { isAbsolute, posix } from "node:path";
import { CliError } from "./errors.js";

/** Words written as they are: nothing systemd would split, unquote, unescape or expand. */
const PLAIN_WORD = /^[A-Za-z0-9_@+=:,./-]+$/;
// biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what it finds
const CONTROL = /[\u0000-\u001f\u007f]/;

function refuse(message: string): never {
  throw new CliError("invalid_service_input", message);
}

/** Text systemd can hold at all: well-formed Unicode (unit files are UTF-8) without NUL. */
function checkText(value: string, what: string): void {
  // In a /u expression a surrogate pair is one code point: what \p{Cs} finds is a lone half.
  if (/\p{Cs}/u.test(value)) refuse(`${what} is not well-formed Unicode`);
  if (value.includes("\0")) refuse(`${what} contains a NUL character`);
}

/** `%` starts a specifier in nearly every setting; `%%` is a literal one. */
function specifiersEscaped(value: string): string {
  return value.replaceAll("%", "%%");
}

/**
 * One word of a command line (`ExecStart=`): plain words as they are, every other word in double
 * quotes with `\` and `"` escaped, control characters as `\xNN`, `%` as `%%` and `$` as `$$` (a
 * `$` would otherwise be taken for an environment variable). A quoted `;` is an argument, not a
 * command separator.
 */
export function execWord(word: string): string {
  checkText(word, "a command-line word");
  if (PLAIN_WORD.test(word)) return word;
  let quoted = "";
  for (const char of word) {
    if (char === "\\" || char === '"') quoted += `\\${char}`;
    else if (char === "%") quoted += "%%";
    else if (char === "$") quoted += "$$";
    else if (CONTROL.test(char)) quoted += `\\x${char.charCodeAt(0).toString(16).padStart(2, "0")}`;
    else quoted += char;
  }
  return `"${quoted}"`;
}

/** A whole command line (`ExecStart=`): an absolute program, then its arguments, each one word. */
export function execLine(argv: readonly string[]): string {
  const [program] = argv;
  if (program === undefined) refuse("the command to run is empty");
  if (!isAbsolute(program)) refuse(`the program to run must be an absolute path, not ${program}`);
  return argv.map(execWord).join(" ");
}

/**
 * A path systemd is given: absolute and normal (systemd refuses `..` and warns about others),
 * without control characters or backslashes (which some settings unescape and some do not), and
 * without trailing whitespace (systemd strips it from a line).
 */
export function checkPath(path: string, what: string): string {
  checkText(path, what);
  if (!isAbsolute(path)) refuse(`${what} must be an absolute path, not ${path}`);
  if (posix.normalize(path) !== path || (path.length > 1 && path.endsWith("/")))
    refuse(`${what} must be a normal path (no "..", ".", "//" or trailing "/"): ${path}`);
  if (CONTROL.test(path) || path.includes("\\"))
    refuse(`${what} must not contain control characters or backslashes: ${path}`);
  if (/\s$/.test(path)) refuse(`${what} must not end in whitespace: ${path}`);
  return path;
}

/** A path taken to the end of the line (`EnvironmentFile=`, `WorkingDirectory=`): specifiers escaped. */
export function linePath(path: string, what: string): string {
  return specifiersEscaped(checkPath(path, what));
}

/** One path of a space-separated list (`ReadWritePaths=`): quoted, specifiers escaped (no variables). */
export function listPath(path: string, what: string): string {
  return `"${specifiersEscaped(checkPath(path, what)).replaceAll('"', '\\"')}"`;
}

/** A variable name an environment file can hold (and a shell could too). */
export const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

/**
 * One `NAME="value"` line of an `EnvironmentFile=`: double-quoted, where `\`, `"`, `` ` `` and `$`
 * are escaped with a backslash (systemd.exec(5): "the same escape sequences are recognized as in
 * double-quoted text of a POSIX shell"). Line breaks are refused: a setting is one line.
 */
export function envFileLine(name: string, value: string): string {
  if (!ENV_NAME.test(name)) refuse(`${name} is not an environment variable name`);
  // The message names the variable, never its value: it may be the host token.
  checkText(value, `the value of ${name}`);
  if (/[\r\n]/.test(value)) refuse(`the value of ${name} contains a line break`);
  return `${name}="${value.replace(/[\\"`$]/g, (c) => `\\${c}`)}"`;
}
