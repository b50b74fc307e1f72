import type { RuntimeKind } from "../../../protocol/tunnel.js";
import { type HostAttachment, hostAttachment } from "./host-attachment.js";

/** A host with an open, registered channel (its hello was accepted, so its runtime is known). */
export interface ConnectedHost {
  ws: WebSocket;
  attachment: HostAttachment & { runtime: RuntimeKind };
  /** When it was last heard from: its last auto-answered ping, else its hello (ms since the epoch). */
  lastSeen: number | null;
}

/** What reading the channels needs of the object's state. */
export type ChannelState = Pick<DurableObjectState, "getWebSockets" | "getWebSocketAutoResponseTimestamp">;

/**
 * Hosts with an open, registered connection that has not gone silent: a channel whose last
 * auto-answered ping is older than `silentAfterMs` counts as gone even before it closes.
 */
export function connectedHosts(state: ChannelState, silentAfterMs: number): ConnectedHost[] {
  const now = Date.now();
  const hosts: ConnectedHost[] = [];
  for (const ws of state.getWebSockets()) {
    const a = hostAttachment(ws);
    if (!a?.ready || a.runtime === null || ws.readyState !== WebSocket.OPEN) continue;
    const lastPing = state.getWebSocketAutoResponseTimestamp(ws);
    if (lastPing !== null && now - lastPing.getTime() > silentAfterMs) continue;
    hosts.push({
      ws,
      attachment: { ...a, runtime: a.runtime },
      lastSeen: Math.max(lastPing?.getTime() ?? 0, a.connectedAt ?? 0) || null,
    });
  }
  return hosts;
}

/** The tag of a host's channel WebSockets: a newer connection closes the older ones by it. */
export function hostTag(hostId: string): string {
  return `host:${hostId}`;
}

/** Sends on a channel; false when it is closed (the caller decides what that means). */
export function trySend(ws: WebSocket, text: string): boolean {
  try {
    ws.send(text);
    return true;
  } catch {
    return false;
  }
}
