/** Which agent `npm start` runs: the chosen one when it can, the scripted droid otherwise, saying why. */
import { describe, expect, it } from "vitest";
import { agentChoice } from "../../scripts/stack/start-settings.js";

describe("npm start's agent", () => {
  it("runs the scripted droid unless asked otherwise", () => {
    expect(agentChoice("scripted", {}, true)).toEqual({ agent: "scripted" });
  });

  it("runs the chosen CLI when Docker is there and its provider's key is configured", () => {
    expect(agentChoice("claude", { OUBLIETTE_ANTHROPIC_API_KEY: "sk-x" }, true)).toEqual({ agent: "claude" });
    expect(agentChoice("codex", { OUBLIETTE_OPENAI_API_KEY: "sk-x" }, true)).toEqual({ agent: "codex" });
    expect(agentChoice("gemini", { OUBLIETTE_MODEL_KEYS: "/etc/keys.json" }, true)).toEqual({
      agent: "gemini",
    });
  });

  it("falls back to the scripted droid, naming the missing key, when the provider has none", () => {
    const choice = agentChoice("codex", { OUBLIETTE_ANTHROPIC_API_KEY: "sk-x" }, true);
    expect(choice.agent).toBe("scripted");
    expect(choice.note).toContain("OUBLIETTE_OPENAI_API_KEY");
  });

  it("falls back to the scripted droid without Docker, saying so", () => {
    const choice = agentChoice("claude", { OUBLIETTE_ANTHROPIC_API_KEY: "sk-x" }, false);
    expect(choice).toMatchObject({ agent: "scripted", note: expect.stringContaining("needs Docker") });
  });
});
