import type { CallerPrincipal } from "../../../worker/src/auth/tokens.js";

/** The fixed test tokens of vitest.config.ts `WORKERS_TEST_VARS`. */
const token = (last: string) => `oub_${"0".repeat(63)}${last}`;

/** Caller token with scope admin (token id "admin"). */
export const ADMIN_TOKEN = token("1");
/** The host-agent token. */
export const HOST_TOKEN = token("2");
/** A second admin-scope caller token (token id "other"). */
export const OTHER_TOKEN = token("3");
/** A read-only caller token (scope admin:ro, token id "reader"). */
export const READER_TOKEN = token("4");
/** Well-formed but not configured. */
export const UNKNOWN_TOKEN = token("9");

export const ADMIN: CallerPrincipal = { kind: "caller", tokenId: "admin", scopes: ["admin"] };
export const OTHER: CallerPrincipal = { kind: "caller", tokenId: "other", scopes: ["admin"] };
export const READER: CallerPrincipal = { kind: "caller", tokenId: "reader", scopes: ["admin:ro"] };

/** The grace period and keep-alive of the test configuration. */
export const GRACE_MS = 500;
export const KEEPALIVE_MS = 1_000;
