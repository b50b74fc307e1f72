import { z } from "zod";
import { randomHex, sha256Hex } from "../../auth/digest.js";
import type { Env } from "../../env.js";
import { objects } from "../../objects/keys.js";
import { McpErrorCode, RpcError } from "../json-rpc.js";

/**
 * `requestState` of MCP input-required results (SEP-2322): what a round asked is carried by the
 * client, so it is integrity-protected — HMAC-SHA-256 over the payload — and bound to the token
 * that asked, the method, the tool and its arguments, with a short expiry. The client cannot read
 * anything secret in it (there is nothing secret in it) and cannot change it: a state that fails
 * any check is refused.
 */

/** How long a client has to answer an input-required round. */
export const REQUEST_STATE_TTL_MS = 10 * 60_000;

/** Most input-request keys a state remembers having asked. */
const MAX_ASKED_KEYS = 16;

/** What a state is bound to: who asked, for what. */
export interface StateBinding {
  tokenId: string;
  method: string;
  tool: string;
  /** The arguments as the tool's schema reads them (their order is the schema's, so stable). */
  arguments: unknown;
}

const PayloadSchema = z.object({
  v: z.literal(1),
  tok: z.string(),
  m: z.string(),
  t: z.string(),
  a: z.string(),
  exp: z.number().int(),
  n: z.string(),
  /** The keys of the input requests the round asked, when the answer depends on which (optional). */
  k: z.array(z.string().max(256)).max(MAX_ASKED_KEYS).optional(),
});

const encoder = new TextEncoder();

async function hmacKey(env: Env): Promise<CryptoKey> {
  const secret = env.OUBLIETTE_REQUEST_STATE_KEY ?? (await objects.tokens(env).requestStateKey());
  return crypto.subtle.importKey("raw", encoder.encode(secret), { name: "HMAC", hash: "SHA-256" }, false, [
    "sign",
    "verify",
  ]);
}

function toBase64Url(bytes: Uint8Array): string {
  let text = "";
  for (const b of bytes) text += String.fromCharCode(b);
  return btoa(text).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
}

function fromBase64Url(text: string): Uint8Array | null {
  if (!/^[A-Za-z0-9_-]*$/.test(text)) return null;
  try {
    const binary = atob(
      text
        .replace(/-/g, "+")
        .replace(/_/g, "/")
        .padEnd(Math.ceil(text.length / 4) * 4, "="),
    );
    return Uint8Array.from(binary, (c) => c.charCodeAt(0));
  } catch {
    return null;
  }
}

async function digestOf(binding: StateBinding): Promise<string> {
  return sha256Hex(JSON.stringify(binding.arguments ?? null));
}

/**
 * A fresh state for one input-required round; `asked`, the keys of the input requests it makes,
 * is carried (integrity-protected) for a round whose answers count only for what was asked.
 */
export async function mintRequestState(
  env: Env,
  binding: StateBinding,
  now = Date.now(),
  asked?: readonly string[],
): Promise<string> {
  if (asked !== undefined && asked.length > MAX_ASKED_KEYS)
    throw new Error(`a request state remembers at most ${MAX_ASKED_KEYS} input requests`);
  const payload = {
    v: 1,
    tok: binding.tokenId,
    m: binding.method,
    t: binding.tool,
    a: await digestOf(binding),
    exp: now + REQUEST_STATE_TTL_MS,
    n: randomHex(8),
    ...(asked !== undefined ? { k: [...asked] } : {}),
  } satisfies z.infer<typeof PayloadSchema>;
  const body = toBase64Url(encoder.encode(JSON.stringify(payload)));
  const mac = await crypto.subtle.sign("HMAC", await hmacKey(env), encoder.encode(body));
  return `${body}.${toBase64Url(new Uint8Array(mac))}`;
}

/**
 * Whether `state` is one this installation minted, unexpired, for this very request: same token,
 * method, tool and arguments. The MAC is checked first (in constant time, by WebCrypto).
 */
export async function verifyRequestState(
  env: Env,
  state: string,
  binding: StateBinding,
  now = Date.now(),
): Promise<boolean> {
  return (await openRequestState(env, state, binding, now)) !== null;
}

/**
 * As `verifyRequestState`, and what the verified state carries: the keys its round asked (empty
 * when it did not say); null when the state fails any check.
 */
export async function openRequestState(
  env: Env,
  state: string,
  binding: StateBinding,
  now = Date.now(),
): Promise<{ asked: string[] } | null> {
  if (state.length > 4096) return null;
  const [body, mac, extra] = state.split(".");
  if (body === undefined || mac === undefined || extra !== undefined) return null;
  const signature = fromBase64Url(mac);
  if (signature === null) return null;
  const valid = await crypto.subtle.verify("HMAC", await hmacKey(env), signature, encoder.encode(body));
  if (!valid) return null;
  const bytes = fromBase64Url(body);
  if (bytes === null) return null;
  let parsed: unknown;
  try {
    parsed = JSON.parse(new TextDecoder().decode(bytes));
  } catch {
    return null;
  }
  const payload = PayloadSchema.safeParse(parsed);
  if (!payload.success) return null;
  const p = payload.data;
  const bound =
    p.exp > now &&
    p.tok === binding.tokenId &&
    p.m === binding.method &&
    p.t === binding.tool &&
    p.a === (await digestOf(binding));
  return bound ? { asked: p.k ?? [] } : null;
}

/** The answer to a `requestState` that failed verification (-32602, as the SDK answers it). */
export function invalidRequestState(): RpcError {
  return new RpcError(McpErrorCode.invalidParams, "Invalid or expired requestState", {
    reason: "invalid_request_state",
  });
}
