/** Which adapter drives which runtime: one entry per runtime of the catalogue. */
import type { AgentRuntime } from "../../../protocol/agent-runtimes.js";
import { codexDriver } from "./codex.js";
import type { DriverFactory } from "./driver.js";
import { geminiDriver } from "./gemini.js";
import { opencodeDriver } from "./opencode.js";
import { scriptedDriver } from "./scripted.js";

export const DRIVERS: Partial<Record<AgentRuntime, DriverFactory>> = {
  scripted: scriptedDriver,
  codex: codexDriver,
  opencode: opencodeDriver,
  gemini: geminiDriver,
};
