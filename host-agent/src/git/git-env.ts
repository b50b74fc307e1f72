/**
 * The one environment every git run on the host gets (docs/git.md). Git runs commands that its
 * config names (hooks, `core.fsmonitor`, `core.sshCommand`, credential helpers, filters, pagers),
 * and a repository an agent could write is never trusted (git's `gitsecurityboundary`). So: no
 * system or global config (`GIT_CONFIG_NOSYSTEM`, `GIT_CONFIG_GLOBAL=/dev/null`: nothing of the
 * host user's setup, no `url.<base>.insteadOf`), no prompts, no hooks, no fsmonitor, no credential
 * helper, no redirects, and only the protocols a run needs (`GIT_ALLOW_PROTOCOL`). Config is given
 * through `GIT_CONFIG_COUNT` / `GIT_CONFIG_KEY_n` / `GIT_CONFIG_VALUE_n`, never on the command
 * line, where a credential would be visible in the host's process list.
 */
import type { GitProtocol } from "./remote-policy.js";
import { HOST_SSH_COMMAND } from "./ssh-command.js";

/** Settings every run has, over anything a repository's own config says. */
const CLOSED_CONFIG: readonly (readonly [string, string])[] = [
  ["core.hooksPath", "/dev/null"],
  ["core.fsmonitor", "false"],
  ["core.pager", "cat"],
  ["core.askPass", ""],
  ["core.sshCommand", HOST_SSH_COMMAND],
  // An empty value resets the list of helpers: none is asked, none stores anything.
  ["credential.helper", ""],
  ["http.followRedirects", "false"],
  ["protocol.allow", "never"],
];

export interface GitRunSettings {
  /** The protocols this run may use (each allowed by name; everything else refused). */
  protocols: readonly GitProtocol[];
  /** Further config for this run only (a remote's credential header, say). */
  config?: readonly (readonly [string, string])[];
}

/** The environment of one host-side git run. */
export function closedGitEnv(
  settings: GitRunSettings,
  base: NodeJS.ProcessEnv = process.env,
): Record<string, string> {
  const config = [
    ...CLOSED_CONFIG,
    ...settings.protocols.map((p) => [`protocol.${p}.allow`, "always"] as const),
    ...(settings.config ?? []),
  ];
  const env: Record<string, string> = {
    GIT_CONFIG_NOSYSTEM: "1",
    GIT_CONFIG_GLOBAL: "/dev/null",
    GIT_TERMINAL_PROMPT: "0",
    GIT_ASKPASS: "",
    SSH_ASKPASS: "",
    GIT_PROTOCOL_FROM_USER: "0",
    GIT_NO_REPLACE_OBJECTS: "1",
    GIT_ALLOW_PROTOCOL: settings.protocols.join(":"),
    GIT_CONFIG_COUNT: String(config.length),
  };
  config.forEach(([key, value], i) => {
    env[`GIT_CONFIG_KEY_${i}`] = key;
    env[`GIT_CONFIG_VALUE_${i}`] = value;
  });
  // Only what git needs to find itself and ssh's own files; nothing else of the host's environment.
  for (const name of ["PATH", "HOME", "LANG", "TMPDIR"]) {
    const value = base[name];
    if (value !== undefined) env[name] = value;
  }
  return env;
}
