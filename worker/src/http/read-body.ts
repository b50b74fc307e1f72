/**
 * Reads a request body with a byte cap. Past the cap the rest is still read, and discarded: a
 * response sent while the client is still uploading leaves the body half read, and under
 * `wrangler dev` that wedges the dev server for the requests after it (a POST gets 503 "worker
 * restarted mid-request", a GET hangs). hono's `bodyLimit` stops reading at the cap, hence this.
 * The platform caps request bodies itself (100 MB and up by plan), which bounds the discarding.
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
