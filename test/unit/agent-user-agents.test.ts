import { describe, expect, it } from "vitest";
import { runtimeOfRequest } from "../e2e/agent-cli.js";

/** The user agents the pinned CLIs send their model, as the fake model received them. */
const SEEN = {
  claude: "claude-cli/2.1.330 (external, sdk-cli)",
  codex: "oubliette/0.169.0 (Linux Unknown; x86_64) unknown (oubliette; 0.1.0)",
  opencode: "opencode/1.18.33 ai-sdk/provider-utils/4.0.23 runtime/bun/1.3.14",
  gemini: "GeminiCLI-acp/0.61.0/gemini-2.5-pro (linux; x64; terminal)",
  droid: "factory-cli/0.215.0",
} as const;

describe("runtimeOfRequest (the agents tests' lanes)", () => {
  it.each(Object.entries(SEEN))("tells %s's model requests by their user agent", (runtime, agent) => {
    expect(runtimeOfRequest({ "user-agent": agent })).toBe(runtime);
  });

  it("places a request of no known CLI in no lane", () => {
    expect(runtimeOfRequest({ "user-agent": "Bun/1.4.4" })).toBeNull();
    expect(runtimeOfRequest({})).toBeNull();
  });
});
