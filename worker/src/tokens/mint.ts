import { randomHex, sha256Hex } from "../auth/digest.js";

/** A new token: `oub_` + 64 hex digits. Only its SHA-256 and its first characters are kept. */
export async function mintToken(): Promise<{ token: string; sha256: string; prefix: string }> {
  const token = `oub_${randomHex(32)}`;
  return { token, sha256: await sha256Hex(token), prefix: token.slice(0, 10) };
}
