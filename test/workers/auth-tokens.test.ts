import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { sha256Hex } from "../../worker/src/auth/digest.js";
import { authenticate, bearerToken } from "../../worker/src/auth/tokens.js";
import type { Env } from "../../worker/src/env.js";
import { ADMIN_TOKEN, HOST_TOKEN, OTHER_TOKEN, READER_TOKEN, UNKNOWN_TOKEN } from "./support/tokens.js";

/** The test bindings with the token settings replaced (each call is a new env: no cache). */
function envWith(tokens: Partial<Env>): Env {
  return {
    ...env,
    OUBLIETTE_ADMIN_TOKEN: undefined,
    OUBLIETTE_HOST_TOKEN: undefined,
    OUBLIETTE_STATIC_TOKENS: undefined,
    ...tokens,
  };
}

describe("bearerToken", () => {
  it.each([
    ["Bearer abc", "abc"],
    ["bearer   abc  ", "abc"],
    ["Basic abc", null],
    ["Bearer", null],
    ["Bearer a b", null],
    ["", null],
    [undefined, null],
  ])("reads %j as %j", (header, token) => {
    expect(bearerToken(header)).toBe(token);
  });
});

describe("authenticate", () => {
  it("resolves each configured token to its principal", async () => {
    await expect(authenticate(env, ADMIN_TOKEN)).resolves.toEqual({
      kind: "caller",
      tokenId: "admin",
      scopes: ["admin"],
    });
    await expect(authenticate(env, HOST_TOKEN)).resolves.toEqual({
      kind: "host",
      tokenId: "host",
      hostId: null,
    });
    await expect(authenticate(env, OTHER_TOKEN)).resolves.toMatchObject({
      tokenId: "other",
      scopes: ["admin"],
    });
    await expect(authenticate(env, READER_TOKEN)).resolves.toMatchObject({
      tokenId: "reader",
      scopes: ["admin:ro"],
    });
  });

  it.each([
    ["an unknown token", UNKNOWN_TOKEN],
    ["no token", null],
    ["an empty token", ""],
    ["an absurdly long token", `oub_${"a".repeat(600)}`],
  ])("refuses %s", async (_, token) => {
    await expect(authenticate(env, token)).resolves.toBeNull();
  });

  it("accepts a token configured only by its SHA-256, in any case and with spaces", async () => {
    const hash = await sha256Hex("oub_secret");
    const configured = envWith({ OUBLIETTE_ADMIN_TOKEN_SHA256: ` ${hash.toUpperCase()} ` });
    await expect(authenticate(configured, "oub_secret")).resolves.toMatchObject({ tokenId: "admin" });
    await expect(authenticate(configured, "oub_other")).resolves.toBeNull();
  });

  it("fails loudly on a malformed configuration", async () => {
    await expect(authenticate(envWith({ OUBLIETTE_ADMIN_TOKEN_SHA256: "xyz" }), "t")).rejects.toMatchObject({
      code: "config_error",
    });
    await expect(
      authenticate(envWith({ OUBLIETTE_ADMIN_TOKEN: "a", OUBLIETTE_STATIC_TOKENS: "[{" }), "a"),
    ).rejects.toMatchObject({ code: "config_error" });
    const badScope = JSON.stringify([{ id: "x", sha256: "0".repeat(64), scopes: ["root"] }]);
    await expect(
      authenticate(envWith({ OUBLIETTE_ADMIN_TOKEN: "a", OUBLIETTE_STATIC_TOKENS: badScope }), "a"),
    ).rejects.toMatchObject({ code: "config_error" });
  });

  it("fails loudly when no token is configured at all", async () => {
    await expect(authenticate(envWith({}), "anything")).rejects.toMatchObject({ code: "config_error" });
  });
});
