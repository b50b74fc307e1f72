/**
 * Just enough TOML to write a CLI's config file (Codex's `config.toml`): tables, nested tables,
 * strings, booleans, integers and arrays of those. Strings are always basic strings with every
 * character TOML forbids escaped, so a path or a token can never end the string early.
 */

export type TomlScalar = string | number | boolean;
export type TomlValue = TomlScalar | TomlScalar[] | TomlTable;
export interface TomlTable {
  [key: string]: TomlValue;
}

/** A TOML document: the root's keys first, then one `[a.b]` section per table, depth first. */
export function stringifyToml(doc: TomlTable): string {
  const lines: string[] = [];
  writeTable(lines, [], doc);
  return `${lines.join("\n")}\n`;
}

function writeTable(lines: string[], path: string[], table: TomlTable): void {
  const entries = Object.entries(table);
  const plain = entries.filter(([, value]) => !isTable(value));
  const tables = entries.filter((entry): entry is [string, TomlTable] => isTable(entry[1]));
  if (path.length > 0 && (plain.length > 0 || tables.length === 0)) {
    if (lines.length > 0) lines.push("");
    lines.push(`[${path.map(tomlKey).join(".")}]`);
  }
  for (const [key, value] of plain)
    lines.push(`${tomlKey(key)} = ${tomlInline(value as TomlScalar | TomlScalar[])}`);
  for (const [key, value] of tables) writeTable(lines, [...path, key], value);
}

function isTable(value: TomlValue): value is TomlTable {
  return typeof value === "object" && !Array.isArray(value);
}

function tomlInline(value: TomlScalar | TomlScalar[]): string {
  if (Array.isArray(value)) return `[${value.map(tomlInline).join(", ")}]`;
  if (typeof value === "string") return tomlString(value);
  if (typeof value === "number" && !Number.isFinite(value)) throw new Error(`TOML cannot hold ${value}`);
  return String(value);
}

/** A bare key where TOML allows one, else a quoted key. */
export function tomlKey(key: string): string {
  return /^[A-Za-z0-9_-]+$/.test(key) ? key : tomlString(key);
}

const SHORT_ESCAPES: Readonly<Record<number, string>> = {
  8: "\\b",
  9: "\\t",
  10: "\\n",
  12: "\\f",
  13: "\\r",
  34: '\\"',
  92: "\\\\",
};

/** A TOML basic string: quote, backslash and control characters (U+0000–U+001F, U+007F) escaped. */
export function tomlString(text: string): string {
  let out = '"';
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    const short = SHORT_ESCAPES[c];
    if (short !== undefined) out += short;
    else if (c < 0x20 || c === 0x7f) out += `\\u${c.toString(16).padStart(4, "0")}`;
    else out += text[i];
  }
  return `${out}"`;
}
