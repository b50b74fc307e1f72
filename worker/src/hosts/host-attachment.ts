import { z } from "zod";
import { HostDiskSchema, RuntimeKindSchema } from "../../../protocol/tunnel.js";
import { readAttachment } from "../objects/socket-attachment.js";

/** What the host registry keeps on each host channel WebSocket (survives hibernation). */
const HostAttachmentSchema = z.object({
  hostId: z.string(),
  /** The token the host connected with (for the audit log). */
  tokenId: z.string().optional(),
  runtime: RuntimeKindSchema.nullable(),
  maxSessions: z.number(),
  ready: z.boolean(),
  disk: HostDiskSchema.optional(),
  /** The host-agent's version, from its hello. */
  version: z.string().optional(),
  /** When its hello was accepted (ms since the epoch). */
  connectedAt: z.number().optional(),
});
export type HostAttachment = z.infer<typeof HostAttachmentSchema>;

/** A host channel's attachment, read through its schema (null: not a host channel). */
export function hostAttachment(ws: WebSocket): HostAttachment | null {
  return readAttachment(ws, HostAttachmentSchema);
}
