/**
 * Request bodies are always read to their end, what is not wanted discarded: a response sent
 * while the body is still unread makes workerd drop the connection after it (locally, where no
 * edge stands in front of the Worker), so a client that sends its next request on that
 * connection gets a reset; and under `wrangler dev` it wedged the dev server (a POST got 503
 * "worker restarted mid-request", a GET hung). hono's `bodyLimit` stops reading at its cap,
 * hence these. The platform caps request bodies itself (100 MB and up by plan), which bounds the
 * discarding.
 */

export type CappedBody = { ok: true; text: string } | { ok: false; bytes: number };

/** The body as UTF-8 text, or `ok: false` with its full size when it is over `maxBytes`. */
export async function readCappedBody(request: Request, maxBytes: number): Promise<CappedBody> {
  const body = request.body;
  if (body === null) return { ok: true, text: "" };
  // A declared length over the cap is refused without buffering anything (but still read).
  const declared = Number(request.headers.get("content-length") ?? Number.NaN);
  let keep = !(declared > maxBytes);
  const chunks: Uint8Array[] = [];
  let bytes = 0;
  const reader: ReadableStreamDefaultReader<Uint8Array> = body.getReader();
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      bytes += value.byteLength;
      if (bytes > maxBytes) keep = false;
      if (keep) chunks.push(value);
      else chunks.length = 0;
    }
  } finally {
    reader.releaseLock();
  }
  if (!keep) return { ok: false, bytes };
  return { ok: true, text: decode(chunks, bytes) };
}

/**
 * After the response is ready, reads and discards whatever of the request's body nobody read (a
 * request refused before its body was looked at: 401, 403, 404, 405 …).
 */
export async function discardUnreadBody(request: Request): Promise<void> {
  const body = request.body;
  if (body === null || request.bodyUsed || body.locked) return;
  const reader = body.getReader();
  try {
    for (;;) if ((await reader.read()).done) break;
  } catch {
    // The client went away mid-upload: nothing left to keep usable.
  } finally {
    reader.releaseLock();
  }
}

function decode(chunks: Uint8Array[], bytes: number): string {
  const whole = new Uint8Array(bytes);
  let at = 0;
  for (const chunk of chunks) {
    whole.set(chunk, at);
    at += chunk.byteLength;
  }
  // Like Request.text(): malformed UTF-8 becomes U+FFFD rather than an exception.
  return new TextDecoder().decode(whole);
}
