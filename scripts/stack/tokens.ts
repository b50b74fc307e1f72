import { createHash, randomBytes } from "node:crypto";

/** A new token in the product's format: `oub_` followed by 64 hex digits. */
export function newToken(): string {
  return `oub_${randomBytes(32).toString("hex")}`;
}

/** Lowercase hex SHA-256 (what the Worker stores instead of a token). */
export function sha256Hex(text: string): string {
  return createHash("sha256").update(text).digest("hex");
}
