/**
 * The ssh that git runs for a remote (`core.sshCommand`, which git hands to a shell). Without a
 * credential it is the host user's own ssh (its keys, config and known hosts), told never to
 * prompt and never to accept a host key it does not know. With a deploy key it reads nothing of
 * the user's setup: no config file (`-F /dev/null`: no ProxyCommand, no other identities), no
 * agent, that key only, and the credential's known_hosts when it names one.
 */

/** The options every ssh run of the host's git has. */
const ALWAYS = ["BatchMode=yes", "StrictHostKeyChecking=yes", "ConnectTimeout=30"];

/** `value` as one word of a POSIX shell command. */
export function shellWord(value: string): string {
  return `'${value.replaceAll("'", `'\\''`)}'`;
}

/** ssh for a run without a credential: the host user's own setup. */
export const HOST_SSH_COMMAND = ["ssh", ...ALWAYS.flatMap((o) => ["-o", o])].join(" ");

/** ssh for a run with deploy key `keyFile` (and the servers' keys in `knownHostsFile`). */
export function sshCommand(keyFile: string, knownHostsFile?: string): string {
  const options = [
    ...ALWAYS,
    "IdentitiesOnly=yes",
    "IdentityAgent=none",
    "PasswordAuthentication=no",
    "KbdInteractiveAuthentication=no",
    ...(knownHostsFile === undefined
      ? []
      : [`UserKnownHostsFile=${shellWord(knownHostsFile)}`, "GlobalKnownHostsFile=/dev/null"]),
  ];
  return ["ssh", "-F", "/dev/null", "-i", shellWord(keyFile), ...options.flatMap((o) => ["-o", o])].join(" ");
}
