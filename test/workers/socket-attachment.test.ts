/**
 * The one checked way objects read a hibernatable WebSocket's attachment: through the schema of
 * the kind of socket it should be, never a cast.
 */
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { readAttachment } from "../../worker/src/objects/socket-attachment.js";

const SubSchema = z.object({ role: z.literal("sub"), owner: z.boolean() });

function socketWith(attachment: unknown): WebSocket {
  const { 1: server } = new WebSocketPair();
  server.accept();
  server.serializeAttachment(attachment);
  return server;
}

describe("readAttachment", () => {
  it("reads an attachment of the expected kind", () => {
    expect(readAttachment(socketWith({ role: "sub", owner: true }), SubSchema)).toEqual({
      role: "sub",
      owner: true,
    });
  });

  it.each([
    ["another kind of socket", { role: "host", hostId: "h1", ready: true }],
    ["a shape an older version wrote", { role: "sub", owner: "yes" }],
    ["nothing", null],
  ])("answers null for %s", (_, attachment) => {
    expect(readAttachment(socketWith(attachment), SubSchema)).toBeNull();
  });
});
