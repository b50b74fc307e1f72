/**
 * The stateless era's header rules (MCP 2026-07-28, SEP-2243) and its era classification, as
 * pure functions: the Base64 sentinel decoded strictly, values compared as the body's type says,
 * and which POST is which era, refused how.
 */
import { describe, expect, it } from "vitest";
import { RpcErrorCode } from "../../protocol/rpc/errors.js";
import { classifyPost } from "../../worker/src/mcp/modern/classify.js";
import { decodeHeaderValue, headerMatchesBody } from "../../worker/src/mcp/modern/header-values.js";

describe("decodeHeaderValue", () => {
  it.each([
    ["a plain value", "project", "project"],
    ["optional whitespace around it", " \tproject \t", "project"],
    ["the sentinel", "=?base64?SGVsbG8=?=", "Hello"],
    [
      "UTF-8 in the sentinel",
      `=?base64?${btoa(String.fromCharCode(...new TextEncoder().encode("héllo ✓")))}?=`,
      "héllo ✓",
    ],
    ["Base64 without the sentinel (literal)", "SGVsbG8=", "SGVsbG8="],
    ["a sentinel missing its suffix (literal)", "=?base64?SGVsbG8=", "=?base64?SGVsbG8="],
    ["an upper-case marker (literal)", "=?BASE64?SGVsbG8=?=", "=?BASE64?SGVsbG8=?="],
  ])("reads %s", (_, raw, value) => {
    expect(decodeHeaderValue(raw)).toEqual({ ok: true, value });
  });

  it.each([
    ["bad padding", "=?base64?SGVsbG8?="],
    ["characters outside Base64", "=?base64?SGVs!!!bG8=?="],
    ["bytes that are not UTF-8", `=?base64?${btoa("\xff\xfe")}?=`],
    ["a control character", "pro\u0001ject"],
    ["non-ASCII text not encoded", "héllo"],
  ])("refuses %s", (_, raw) => {
    expect(decodeHeaderValue(raw).ok).toBe(false);
  });
});

describe("headerMatchesBody", () => {
  it("compares strings exactly, integers numerically, booleans as true/false", () => {
    expect(headerMatchesBody("prj_1", "prj_1")).toBe(true);
    expect(headerMatchesBody("PRJ_1", "prj_1")).toBe(false);
    expect(headerMatchesBody("42.0", 42)).toBe(true);
    expect(headerMatchesBody("", 0)).toBe(false);
    expect(headerMatchesBody("true", true)).toBe(true);
    expect(headerMatchesBody("True", true)).toBe(false);
    expect(headerMatchesBody("x", { a: 1 })).toBe(false);
  });
});

const META = {
  "io.modelcontextprotocol/protocolVersion": "2026-07-28",
  "io.modelcontextprotocol/clientCapabilities": {},
};

function post(body: unknown, headers: Record<string, string> = {}) {
  const lower = Object.fromEntries(Object.entries(headers).map(([k, v]) => [k.toLowerCase(), v]));
  return classifyPost({
    header: (name) => lower[name],
    body: typeof body === "string" ? body : JSON.stringify(body),
  });
}

const HEADERS = { "mcp-protocol-version": "2026-07-28", "mcp-method": "tools/list" };

describe("classifyPost", () => {
  it.each([
    [
      "initialize",
      { jsonrpc: "2.0", id: 1, method: "initialize", params: { protocolVersion: "2025-11-25" } },
      {},
    ],
    [
      "a 2025 request",
      { jsonrpc: "2.0", id: 1, method: "tools/list" },
      { "mcp-protocol-version": "2025-11-25" },
    ],
    ["a batch", [{ jsonrpc: "2.0", id: 1, method: "tools/list", params: { _meta: META } }], HEADERS],
    ["a response", { jsonrpc: "2.0", id: 1, result: {} }, HEADERS],
    ["text that is not JSON", "{nope", HEADERS],
  ])("leaves %s to the 2025 era", (_, body, headers) => {
    expect(post(body, headers)).toEqual({ era: "legacy" });
  });

  it("takes a request with the envelope as stateless, whatever else it carries", () => {
    const out = post({ jsonrpc: "2.0", id: 7, method: "tools/list", params: { _meta: META } }, HEADERS);
    expect(out).toMatchObject({ era: "modern", message: { id: 7, method: "tools/list" } });
  });

  const rejection = (body: unknown, headers: Record<string, string>) => {
    const out = post(body, headers);
    if (out.era !== "modern" || !("rejection" in out)) throw new Error(`not refused: ${JSON.stringify(out)}`);
    return out.rejection;
  };

  it("refuses a 2026 header without the envelope with -32602, and an initialize so with -32020", () => {
    expect(rejection({ jsonrpc: "2.0", id: 1, method: "tools/list", params: {} }, HEADERS)).toMatchObject({
      status: 400,
      id: 1,
      code: RpcErrorCode.InvalidParams,
    });
    expect(rejection({ jsonrpc: "2.0", id: 2, method: "initialize", params: {} }, HEADERS)).toMatchObject({
      id: 2,
      code: RpcErrorCode.HeaderMismatch,
    });
  });

  it("checks the header version against the body before it checks the version is spoken", () => {
    const v999 = { ...META, "io.modelcontextprotocol/protocolVersion": "v999.0.0" };
    const body = { jsonrpc: "2.0", id: 3, method: "server/discover", params: { _meta: v999 } };
    expect(rejection(body, { ...HEADERS, "mcp-method": "server/discover" }).code).toBe(
      RpcErrorCode.HeaderMismatch,
    );
    expect(
      rejection(body, { "mcp-protocol-version": "v999.0.0", "mcp-method": "server/discover" }),
    ).toMatchObject({ code: RpcErrorCode.UnsupportedProtocolVersion, data: { requested: "v999.0.0" } });
  });

  it("refuses an id that is neither string nor number, once the envelope claims the era", () => {
    expect(
      rejection({ jsonrpc: "2.0", id: null, method: "tools/list", params: { _meta: META } }, HEADERS).code,
    ).toBe(RpcErrorCode.InvalidRequest);
  });
});
