/**
 * Header values of MCP 2026-07-28's routing headers (`Mcp-Name`, `Mcp-Param-*`), read as the
 * transport says: optional whitespace trimmed (RFC 9110 §5.5), visible ASCII only, and non-ASCII
 * values carried Base64-encoded inside the `=?base64?…?=` sentinel, decoded strictly.
 */

const SENTINEL = /^=\?base64\?(.*)\?=$/s;
const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;
/** Visible ASCII and inner spaces / tabs: what a plain (unencoded) value may hold. */
const PLAIN = /^[\x20-\x7e\t]*$/;

export type HeaderValue = { ok: true; value: string } | { ok: false; reason: string };

/** Strips optional whitespace (SP and HTAB) around a field value. */
export function stripOws(value: string): string {
  return value.replace(/^[ \t]+|[ \t]+$/g, "");
}

/**
 * The value a header carries: a plain value as is, or the UTF-8 text inside the Base64 sentinel.
 * A sentinel with bad Base64 (a non-alphabet character, wrong padding) or bytes that are not
 * UTF-8 is refused, as is a plain value with control or non-ASCII characters. A value that only
 * looks like the sentinel (a marker missing, upper case) is plain text.
 */
export function decodeHeaderValue(raw: string): HeaderValue {
  const value = stripOws(raw);
  if (!PLAIN.test(value)) return { ok: false, reason: "contains characters a header value may not carry" };
  const encoded = SENTINEL.exec(value)?.[1];
  if (encoded === undefined) return { ok: true, value };
  if (encoded.length % 4 !== 0 || !BASE64.test(encoded)) {
    return { ok: false, reason: "is not valid Base64 inside =?base64?…?=" };
  }
  try {
    const bytes = Uint8Array.from(atob(encoded), (c) => c.charCodeAt(0));
    return { ok: true, value: new TextDecoder("utf-8", { fatal: true, ignoreBOM: false }).decode(bytes) };
  } catch {
    return { ok: false, reason: "is not UTF-8 once decoded from Base64" };
  }
}

/**
 * Whether a header value (decoded) stands for a body value: strings exactly, integers
 * numerically (`42.0` is 42), booleans as `true` / `false`.
 */
export function headerMatchesBody(header: string, body: unknown): boolean {
  switch (typeof body) {
    case "string":
      return header === body;
    case "boolean":
      return header === String(body);
    case "number":
      return header.trim() !== "" && Number(header) === body;
    default:
      return false;
  }
}
