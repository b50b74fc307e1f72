/**
 * Programs a CLI cannot do without (CLI_RUNTIMES' `needs`): Factory Droid runs every shell command
 * under bash and a `ps` poll, and exits when bash is missing, so the runner refuses to start it in
 * a container lacking them rather than lose the session at its first command.
 */
import { describe, expect, it } from "vitest";
import { lackingPrograms } from "../../container-client/src/runner/agent-launch.js";
import { CLI_RUNTIMES } from "../../protocol/agent-runtimes.js";

describe("programs a CLI needs", () => {
  it("names bash and ps for Factory Droid", () => {
    expect(CLI_RUNTIMES.droid.needs).toEqual(expect.arrayContaining(["bash", "ps"]));
  });

  it("finds a program in /usr/bin, /bin or an absolute PATH entry, and names the missing ones", () => {
    const present = new Set(["/bin/bash", "/opt/tools/ps"]);
    const exists = (file: string) => present.has(file);
    expect(lackingPrograms(["bash", "ps"], "/opt/tools:/usr/local/bin", exists)).toEqual([]);
    expect(lackingPrograms(["bash", "ps"], "/usr/local/bin", exists)).toEqual(["ps"]);
    // A relative PATH entry depends on the working directory: not looked in.
    expect(lackingPrograms(["ps"], "opt/tools:.", (file) => file === "opt/tools/ps")).toEqual(["ps"]);
    expect(lackingPrograms(["bash", "ps"], "", () => false)).toEqual(["bash", "ps"]);
  });
});
