import { createHash, timingSafeEqual } from "node:crypto";

function digest(value: string): Buffer {
  return createHash("sha256").update(value, "utf8").digest();
}

/**
 * Compares a presented session token with the expected one in constant time. Hashing first makes
 * both sides the same length, so the comparison leaks neither content nor length.
 */
export function sessionTokenMatches(presented: string, expected: string): boolean {
  return timingSafeEqual(digest(presented), digest(expected));
}
