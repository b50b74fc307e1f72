/**
 * Frame caps are in bytes, but a WebSocket text frame arrives as a string whose `length` counts
 * UTF-16 units (one to three UTF-8 bytes each), so `length` alone lets multibyte text through.
 */
const encoder = new TextEncoder();

/** Whether `text` is more than `maxBytes` bytes of UTF-8; encodes only when length cannot decide. */
export function exceedsUtf8Bytes(text: string, maxBytes: number): boolean {
  if (text.length > maxBytes) return true;
  if (text.length * 3 <= maxBytes) return false;
  return encoder.encode(text).byteLength > maxBytes;
}
