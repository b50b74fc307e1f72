/**
 * The ssh command the host's git runs (host-agent/src/git/ssh-command.ts), as the shell git hands
 * it to splits it: with a deploy key, no config file of the host user's (-F /dev/null), no agent,
 * that key only, the credential's known hosts, never a prompt, never an unknown host key; without
 * one, the host user's own ssh, still never prompting or trusting an unknown host.
 */
import { execFileSync } from "node:child_process";
import { describe, expect, it } from "vitest";
import { HOST_SSH_COMMAND, shellWord, sshCommand } from "../../host-agent/src/git/ssh-command.js";

/** The argv a POSIX shell makes of `command`. */
function argv(command: string): string[] {
  const out = execFileSync("sh", ["-c", `set -- ${command}; printf '%s\\0' "$@"`], { encoding: "utf8" });
  return out.split("\0").slice(0, -1);
}

describe("ssh for the host's git", () => {
  it("with a deploy key: that key only, no user config, no agent, the credential's known hosts", () => {
    const args = argv(sshCommand("/etc/oubliette/deploy.key", "/etc/oubliette/known_hosts"));
    expect(args.slice(0, 5)).toEqual(["ssh", "-F", "/dev/null", "-i", "/etc/oubliette/deploy.key"]);
    const options = args.filter((_, i) => args[i - 1] === "-o");
    expect(options).toEqual(
      expect.arrayContaining([
        "BatchMode=yes",
        "StrictHostKeyChecking=yes",
        "IdentitiesOnly=yes",
        "IdentityAgent=none",
        "PasswordAuthentication=no",
        "UserKnownHostsFile=/etc/oubliette/known_hosts",
        "GlobalKnownHostsFile=/dev/null",
      ]),
    );
  });

  it("without known hosts of its own, a deploy key run checks the host user's", () => {
    const args = argv(sshCommand("/k"));
    expect(args.join(" ")).not.toMatch(/KnownHostsFile/);
    expect(args).toContain("StrictHostKeyChecking=yes");
  });

  it("without a key: the host user's ssh, never prompting, never trusting an unknown host", () => {
    expect(argv(HOST_SSH_COMMAND)).toEqual([
      "ssh",
      "-o",
      "BatchMode=yes",
      "-o",
      "StrictHostKeyChecking=yes",
      "-o",
      "ConnectTimeout=30",
    ]);
  });

  it("a word with quotes and shell characters reaches ssh as it was", () => {
    for (const word of ["/a b", "/it's", "/$(touch x)", "/`id`;|&"])
      expect(argv(shellWord(word))).toEqual([word]);
  });
});
