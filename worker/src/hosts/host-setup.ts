/**
 * What `host enrol` answers besides the token: how to start that host. The token goes into an
 * environment file (mode 0600) that the operator pastes, never onto a command line (where the
 * process list and the shell's history would keep it); the commands read it from there. One
 * text, shown by the MCP tool and by the console alike.
 */

/** Where the commands put the host-agent and its settings (the `service` subcommand's defaults). */
const AGENT_FILE = "/usr/local/lib/oubliette/host-agent.mjs";
const ENV_FILE = "/etc/oubliette/host-agent.env";

export interface HostSetup {
  /** The environment file's text: the Worker's URL, the host id and its token. */
  env_file: string;
  /** Where to save it (mode 0600). */
  env_path: string;
  /** The commands that start the host, in order, run as root on it. */
  commands: string[];
}

export function hostSetup(input: { workerUrl: string; hostId: string; token: string }): HostSetup {
  const env_file = [
    `OUBLIETTE_WORKER_URL=${input.workerUrl}`,
    `OUBLIETTE_HOST_ID=${input.hostId}`,
    `OUBLIETTE_HOST_TOKEN=${input.token}`,
    "",
  ].join("\n");
  const withSettings = (command: string) => `sh -c 'set -a; . ${ENV_FILE}; exec ${command}'`;
  return {
    env_file,
    env_path: ENV_FILE,
    commands: [
      `# 1. Copy dist/host-agent.mjs (npm run build) to ${AGENT_FILE}; Docker and Node 20+ are all it needs.`,
      `# 2. Save the environment file below as ${ENV_FILE}, readable by root alone:`,
      `install -d -m 700 /etc/oubliette && (umask 077 && cat > ${ENV_FILE})   # paste it, then Ctrl-D`,
      "# 3. Build the images and start it as a service (then `host-agent doctor` checks it):",
      withSettings(`node ${AGENT_FILE} service --environment-file ${ENV_FILE} --force --images --now`),
    ],
  };
}
