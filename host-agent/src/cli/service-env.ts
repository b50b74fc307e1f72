/**
 * The service's environment file: every setting of the host-agent as `NAME="value"`, the host
 * token among them. It is the only file the token is written to (the unit and its command line
 * are readable by every user of the host, and a command line shows in `ps`).
 */
import { CliError } from "./errors.js";
import { envFileLine } from "./systemd-syntax.js";

export const HOST_TOKEN_ENV = "OUBLIETTE_HOST_TOKEN";

/**
 * Flags the command line must not carry: the token (a secret on a command line), and the
 * settings the unit's sandbox is made from, which a flag would override behind its back.
 */
const FLAGS_KEPT_OUT: Readonly<Record<string, string>> = {
  "--host-token": `give the token in the environment file (${HOST_TOKEN_ENV})`,
  "--data-dir": "give the data directory as the service's data directory",
  "--socket-dir": "give the socket directory as the service's socket directory",
  "--disk-mode": "give it in the environment file (OUBLIETTE_DISK_MODE): the unit's sandbox depends on it",
};

/** Refuses a command line that carries the token or overrides what the unit was made for. */
export function checkCommandLine(argv: readonly string[], token: string): void {
  for (const word of argv) {
    const flag = word.split("=", 1)[0] ?? word;
    const why = FLAGS_KEPT_OUT[flag];
    if (why !== undefined)
      throw new CliError("invalid_service_input", `the command line has ${flag}: ${why}`);
    // Never echo the word: it holds the secret.
    if (word.includes(token))
      throw new CliError(
        "invalid_service_input",
        `the command line contains the host token; ${FLAGS_KEPT_OUT["--host-token"]}`,
      );
  }
}

/**
 * The environment file's text: `env` plus the data and socket directories (the unit's writable
 * paths, so the host-agent uses exactly those), sorted by name. A different directory given in
 * `env` too is refused rather than silently chosen between.
 */
export function envFileText(
  env: Readonly<Record<string, string>>,
  dirs: { dataDir: string; socketDir: string },
): string {
  const token = env[HOST_TOKEN_ENV];
  if (token === undefined || token === "")
    throw new CliError(
      "invalid_service_input",
      `the environment needs ${HOST_TOKEN_ENV}: the Worker admits no host without it`,
    );
  // As the host-agent's own configuration says (and a short one would match half the command line).
  if (token.length < 8)
    throw new CliError("invalid_service_input", `${HOST_TOKEN_ENV} is too short to be a token`);
  const all: Record<string, string> = { ...env };
  for (const [name, value] of [
    ["OUBLIETTE_DATA_DIR", dirs.dataDir],
    ["OUBLIETTE_SOCKET_DIR", dirs.socketDir],
  ] as const) {
    const given = all[name];
    if (given !== undefined && given !== value)
      throw new CliError(
        "invalid_service_input",
        `${name}=${given} in the environment is not the service's ${value}`,
      );
    all[name] = value;
  }
  const lines = Object.keys(all)
    .sort()
    .map((name) => envFileLine(name, all[name] as string));
  return [
    "# Oubliette host-agent settings, read by systemd (EnvironmentFile=).",
    `# It holds ${HOST_TOKEN_ENV}: keep it mode 0600, owned by root.`,
    ...lines,
    "",
  ].join("\n");
}
