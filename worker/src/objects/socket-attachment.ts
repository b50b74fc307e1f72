import type { z } from "zod";

/**
 * A hibernatable WebSocket's attachment, read through the schema of the kind of socket it should
 * be: null when it is another kind, or carries nothing that schema reads (written by an older
 * version, say). The one way objects read attachments — never a cast, since an attachment
 * outlives the code that wrote it.
 */
export function readAttachment<S extends z.ZodType>(ws: WebSocket, schema: S): z.output<S> | null {
  const parsed = schema.safeParse(ws.deserializeAttachment());
  return parsed.success ? parsed.data : null;
}
