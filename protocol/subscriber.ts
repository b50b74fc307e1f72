import { z } from "zod";
import { JsonValueSchema } from "./json.js";

/**
 * Frames on `GET /v1/sessions/:id/ws` besides the session events the server sends (each a
 * SessionEvent JSON object). A caller may answer caller tool requests on this socket.
 */
export const SubscriberFrameSchema = z.discriminatedUnion("type", [
  z.object({
    type: z.literal("caller_tool_response"),
    request_id: z.string().min(1).max(128),
    result: JsonValueSchema.optional(),
    error: JsonValueSchema.optional(),
  }),
]);
export type SubscriberFrame = z.infer<typeof SubscriberFrameSchema>;

/** The server's answer to a subscriber frame. */
export type SubscriberReply =
  | { type: "caller_tool_response_result"; request_id: string; ok: true }
  | {
      type: "caller_tool_response_result";
      request_id: string;
      ok: false;
      error: { code: string; message: string };
    }
  | { type: "frame_error"; error: { code: string; message: string } };
