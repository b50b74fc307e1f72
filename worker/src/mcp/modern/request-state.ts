import { z } from "zod";
import { randomHex, sha256Hex } from "../../auth/digest.js";
import type { Env } from "../../env.js";
import { objects } from "../../objects/keys.js";

/**
 * `requestState` of MCP input-required results (SEP-2322): what a round asked is carried by the
 * client, so it is integrity-protected — HMAC-SHA-256 over the payload — and bound to the token
 * that asked, the method, the tool and its arguments, with a short expiry. The client cannot read
 * anything secret in it (there is nothing secret in it) and cannot change it: a state that fails
 * any check is refused.
 */

/** How long a client has to answer an input-required round. */
export const REQUEST_STATE_TTL_MS = 10 * 60_000;

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

/** A fresh state for one input-required round. */
export async function mintRequestState(env: Env, binding: StateBinding, now = Date.now()): Promise<string> {
  const payload = {
    v: 1,
    tok: binding.tokenId,
    m: binding.method,
    t: binding.tool,
    a: await digestOf(binding),
    exp: now + REQUEST_STATE_TTL_MS,
    n: randomHex(8),
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
  if (state.length > 4096) return false;
  const [body, mac, extra] = state.split(".");
  if (body === undefined || mac === undefined || extra !== undefined) return false;
  const signature = fromBase64Url(mac);
  if (signature === null) return false;
  const valid = await crypto.subtle.verify("HMAC", await hmacKey(env), signature, encoder.encode(body));
  if (!valid) return false;
  const bytes = fromBase64Url(body);
  if (bytes === null) return false;
  let parsed: unknown;
  try {
    parsed = JSON.parse(new TextDecoder().decode(bytes));
  } catch {
    return false;
  }
  const payload = PayloadSchema.safeParse(parsed);
  if (!payload.success) return false;
  const p = payload.data;
  return (
    p.exp > now &&
    p.tok === binding.tokenId &&
    p.m === binding.method &&
    p.t === binding.tool &&
    p.a === (await digestOf(binding))
  );
}
