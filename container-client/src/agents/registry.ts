/** Which adapter drives which runtime: one entry per runtime of the catalogue. */
import type { AgentRuntime } from "../../../protocol/agent-runtimes.js";
import { claudeDriver } from "./claude.js";
import type { DriverFactory } from "./driver.js";
import { droidDriver } from "./droid.js";
import { scriptedDriver } from "./scripted.js";

export const DRIVERS: Partial<Record<AgentRuntime, DriverFactory>> = {
  scripted: scriptedDriver,
  claude: claudeDriver,
  droid: droidDriver,
};
