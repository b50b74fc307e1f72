/** Reading model usage from responses as their bytes pass, however they are cut. */
import { describe, expect, it } from "vitest";
import { costOf } from "../../host-agent/src/models/prices.js";
import { UsageReader } from "../../host-agent/src/models/usage-reader.js";

const anthropicSse =
  'event: message_start\ndata: {"type":"message_start","message":{"model":"claude-opus-4","usage":{"input_tokens":10,"cache_read_input_tokens":90,"output_tokens":1}}}\n\n' +
  'event: message_delta\ndata: {"type":"message_delta","usage":{"output_tokens":42}}\n\n';

function readAll(reader: UsageReader, text: string, pieceBytes: number) {
  const bytes = Buffer.from(text);
  for (let i = 0; i < bytes.length; i += pieceBytes) reader.push(bytes.subarray(i, i + pieceBytes));
  return reader.finish();
}

describe("UsageReader", () => {
  it("reads Anthropic's streamed usage even when every byte arrives alone (cache reads count as input)", () => {
    const usage = readAll(new UsageReader("anthropic", "text/event-stream; charset=utf-8"), anthropicSse, 1);
    expect(usage).toEqual({ inputTokens: 100, outputTokens: 42, model: "claude-opus-4" });
  });

  it("reads a whole JSON body", () => {
    const body = '{"model":"gpt-5-mini","usage":{"prompt_tokens":3,"completion_tokens":4}}';
    expect(readAll(new UsageReader("openai_chat", "application/json"), body, 7)).toEqual({
      inputTokens: 3,
      outputTokens: 4,
      model: "gpt-5-mini",
    });
  });

  it("says nothing for a response without usage, an error page, or a path that has none", () => {
    expect(readAll(new UsageReader("anthropic", "application/json"), '{"type":"error"}', 100)).toBeNull();
    expect(readAll(new UsageReader("gemini", "text/html"), "<html>oops</html>", 100)).toBeNull();
    expect(
      readAll(new UsageReader("none", "application/json"), '{"usage":{"input_tokens":5}}', 100),
    ).toBeNull();
  });

  it("prices by the longest model prefix, with a provider fallback", () => {
    expect(costOf("anthropic", "claude-opus-4", 1_000_000, 0)).toBe(15);
    expect(costOf("openai", "gpt-5-mini-2026", 0, 1_000_000)).toBe(2);
    expect(costOf("openai", "gpt-5", 0, 1_000_000)).toBe(10);
    expect(costOf("google", "some-new-model", 1_000_000, 0)).toBe(1.25);
  });
});
