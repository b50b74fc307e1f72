/** Which adapter drives which runtime: one entry per runtime of the catalogue (the compiler checks none is missing). */
import type { AgentRuntime } from "../../../protocol/agent-runtimes.js";
import { claudeDriver } from "./claude.js";
import { codexDriver } from "./codex.js";
import type { DriverFactory } from "./driver.js";
import { droidDriver } from "./droid.js";
import { geminiDriver } from "./gemini.js";
import { opencodeDriver } from "./opencode.js";
import { scriptedDriver } from "./scripted.js";

export const DRIVERS: Readonly<Record<AgentRuntime, DriverFactory>> = {
  scripted: scriptedDriver,
  claude: claudeDriver,
  droid: droidDriver,
  codex: codexDriver,
  opencode: opencodeDriver,
  gemini: geminiDriver,
};
