/**
 * The command line Codex asks to run, as a person (and an approval rule) reads it. Codex runs
 * every command of its shell tool as `<shell> -lc <script>` and sends that argv joined as one
 * shell line (v2) or as the argv itself (v1). The line asked about is the script when the
 * command is exactly such a wrapper, as Codex's own terminal UI shows it, else the whole line.
 */

const SHELLS = new Set(["bash", "sh", "zsh", "dash"]);
const SCRIPT_FLAGS = new Set(["-c", "-lc"]);
const SAFE_WORD = /^[A-Za-z0-9_@%+=:,./-]+$/;
/** Characters a shell interprets outside quotes (operators, expansions, globs, comments). */
const OPERATORS = ";&|<>()$`*?[]{}#~!";

/** argv as one POSIX shell line (each word quoted only where it needs it). */
export function shellJoin(argv: readonly string[]): string {
  return argv.map(quoteWord).join(" ");
}

function quoteWord(word: string): string {
  if (SAFE_WORD.test(word)) return word;
  return `'${word.replaceAll("'", `'"'"'`)}'`;
}

/** The script a `<shell> -c|-lc <script>` argv runs, or undefined when argv is not such a wrapper. */
export function wrappedScript(argv: readonly string[]): string | undefined {
  if (argv.length !== 3) return undefined;
  const [shell, flag, script] = argv as [string, string, string];
  const name = shell.slice(shell.lastIndexOf("/") + 1);
  return SHELLS.has(name) && SCRIPT_FLAGS.has(flag) ? script : undefined;
}

/** The command line to ask about, from v1's argv or v2's joined line. */
export function commandLine(command: string | readonly string[]): string {
  const argv = typeof command === "string" ? shellSplit(command) : command;
  const script = argv === undefined ? undefined : wrappedScript(argv);
  if (script !== undefined) return script;
  return typeof command === "string" ? command : shellJoin(command);
}

/**
 * A POSIX shell line split into words (single and double quotes, backslashes), or undefined when
 * it holds anything else a shell would interpret (an unclosed quote, an operator, an expansion or a
 * glob outside quotes, `$` or a backtick in double quotes): then the line is not taken apart at all.
 */
export function shellSplit(line: string): string[] | undefined {
  const words: string[] = [];
  let word = "";
  let inWord = false;
  for (let i = 0; i < line.length; i++) {
    const c = line[i] as string;
    if (c === " " || c === "\t" || c === "\n") {
      if (inWord) words.push(word);
      word = "";
      inWord = false;
      continue;
    }
    inWord = true;
    if (c === "'") {
      const end = line.indexOf("'", i + 1);
      if (end < 0) return undefined;
      word += line.slice(i + 1, end);
      i = end;
    } else if (c === '"') {
      const end = readDoubleQuoted(line, i + 1);
      if (end === undefined) return undefined;
      word += end.text;
      i = end.close;
    } else if (c === "\\") {
      if (i + 1 >= line.length) return undefined;
      word += line[++i];
    } else if (OPERATORS.includes(c)) {
      return undefined;
    } else {
      word += c;
    }
  }
  if (inWord) words.push(word);
  return words;
}

/** The text of a double-quoted string that starts at `from` and the index of its closing quote. */
function readDoubleQuoted(line: string, from: number): { text: string; close: number } | undefined {
  let text = "";
  for (let i = from; i < line.length; i++) {
    const c = line[i] as string;
    if (c === '"') return { text, close: i };
    if (c === "$" || c === "`") return undefined;
    if (c === "\\" && i + 1 < line.length && '"\\$`\n'.includes(line[i + 1] as string)) {
      text += line[++i];
      continue;
    }
    text += c;
  }
  return undefined;
}
