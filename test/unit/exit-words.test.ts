/** How an agent's end is said in its session's events (container-client/src/runner/exit-words.ts). */
import { describe, expect, it } from "vitest";
import { describeExit, ordinal } from "../../container-client/src/runner/exit-words.js";

describe("exit words", () => {
  it.each([
    [1, "1st"],
    [2, "2nd"],
    [3, "3rd"],
    [4, "4th"],
    [11, "11th"],
    [12, "12th"],
    [13, "13th"],
    [21, "21st"],
    [22, "22nd"],
    [101, "101st"],
    [111, "111th"],
  ])("%i is the %s", (n, said) => {
    expect(ordinal(n)).toBe(said);
  });

  it("says an exit code or a signal (no OOM count known: never an OOM kill)", async () => {
    expect(await describeExit({ exitCode: 3, signal: null }, null)).toBe("exited with code 3");
    expect(await describeExit({ exitCode: null, signal: "SIGTERM" }, null)).toBe("was killed by SIGTERM");
    expect(await describeExit({ exitCode: null, signal: "SIGKILL" }, null)).toBe("was killed by SIGKILL");
    expect(await describeExit({ exitCode: null, signal: null }, 0)).toBe("exited with code unknown");
  });
});
