/**
 * The SSE body every event stream is written to (worker/src/streams/sse.ts): events arrive as
 * SSE text; a reader that went away is noticed at the next write; one that stays but stops
 * reading is dropped once its queue passes the cap (in bytes), not held forever.
 */
import { describe, expect, it } from "vitest";
import { MAX_QUEUED_BYTES, SseStream } from "../../worker/src/streams/sse.js";

async function readText(stream: SseStream, bytes: number): Promise<string> {
  const reader = stream.readable.getReader();
  const decoder = new TextDecoder();
  let text = "";
  while (text.length < bytes) {
    const { done, value } = await reader.read();
    if (done) break;
    text += decoder.decode(value, { stream: true });
  }
  reader.releaseLock();
  return text;
}

const settle = () => new Promise((resolve) => setTimeout(resolve, 10));

describe("an SSE stream", () => {
  it("carries events, ids, comments and the retry delay as SSE text", async () => {
    const stream = new SseStream(() => {});
    stream.retry(1000);
    stream.event('{"a":1}', 7);
    stream.comment("keep-alive");
    stream.prime(8);
    const expected = 'retry: 1000\n\nid: 7\ndata: {"a":1}\n\n: keep-alive\n\nid: 8\ndata: \n\n';
    expect(await readText(stream, expected.length)).toBe(expected);
    stream.close();
    expect(stream.dead).toBe(true);
  });

  it("notices a reader that went away at the next write, once", async () => {
    let dead = 0;
    const stream = new SseStream(() => {
      dead += 1;
    });
    await stream.readable.cancel();
    stream.comment("probe");
    await settle();
    stream.comment("again");
    await settle();
    expect(stream.dead).toBe(true);
    expect(dead).toBe(1);
  });

  it("drops a reader that stops reading once its queue passes the cap", async () => {
    let dead = 0;
    const stream = new SseStream(() => {
      dead += 1;
    });
    const event = "x".repeat(256 * 1024);
    const fits = Math.floor(MAX_QUEUED_BYTES / event.length);
    let written = 0;
    // Bounded: twice what the cap holds.
    while (!stream.dead && written < 2 * fits) {
      stream.event(event);
      written += 1;
    }
    expect(stream.dead).toBe(true);
    expect(dead).toBe(1);
    expect(written).toBeGreaterThanOrEqual(fits - 1);
    expect(written).toBeLessThanOrEqual(fits + 2);
  });
});
