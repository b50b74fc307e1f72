/**
 * The host-agent's systemd unit. Why each setting is there (or is not) is said in the unit
 * itself, for the operator who reads it:
 * - it runs as root unless told otherwise: it needs the Docker socket, gives workspaces and
 *   socket directories to the sessions' uids (chown), and loop-mounts projects' volumes;
 * - the droids' containers are Docker's, outside this unit's control group, so the default
 *   `KillMode=control-group` stops only what the host-agent itself started (git, ssh, du,
 *   mount, process-runtime droids) and leaves the containers running for the next start;
 * - hardening that needs no mount namespace is always on; the filesystem sandbox
 *   (`ProtectSystem=strict`, `ReadWritePaths=`, `ProtectHome=read-only`, `PrivateTmp=`, the
 *   kernel and cgroup protections) only when the host-agent mounts nothing: every one of those
 *   settings gives the unit a mount namespace whose mounts do not propagate to the host
 *   (systemd.exec(5), `MountFlags=`), so a project volume it loop-mounted would stay invisible to
 *   the Docker Engine that bind-mounts it into the project's container;
 * - no `RestrictSUIDSGID=` (workspace directories are setgid: 02770) and no `UMask=0077` (the
 *   images the host-agent builds keep the modes of the files it fetched, which the containers'
 *   users must read; its secrets get modes of their own).
 */
import { HOST_AGENT_PROCESS_ENV } from "../node-flags.js";
import { execLine, linePath, listPath } from "./systemd-syntax.js";

export interface UnitSettings {
  execStart: readonly string[];
  envFile: string;
  workingDirectory?: string | undefined;
  /** A user other than root; undefined: root. */
  user?: string | undefined;
  dataDir: string;
  socketDir: string;
  /** Whether the filesystem sandbox applies (the host-agent mounts no volumes). */
  sandboxed: boolean;
}

/** The host-agent's own shutdown gives up after 20 s (cli/start.ts); systemd's SIGKILL comes later. */
const STOP_TIMEOUT_SECONDS = 30;

const HARDENING = [
  "# Hardening that needs no mount namespace (see the comment on the sandbox below).",
  "NoNewPrivileges=yes",
  "LockPersonality=yes",
  "RestrictRealtime=yes",
  "SystemCallArchitectures=native",
  "# No RestrictSUIDSGID=: a workspace's directories are setgid (02770), so what is made in it",
  "# belongs to the workspace's group.",
];

function sandbox(settings: UnitSettings): string[] {
  if (!settings.sandboxed) {
    return [
      "# No filesystem sandbox (ProtectSystem=, ProtectHome=, PrivateTmp=, ReadWritePaths=,",
      "# ProtectKernelTunables=, ProtectKernelModules=, ProtectControlGroups=): each of them puts",
      "# the host-agent in a mount namespace whose mounts never reach the host, and it loop-mounts",
      "# each project's volume, which the Docker Engine must see to bind-mount it into the",
      "# project's container. With OUBLIETTE_DISK_MODE=measured (no mounts) the unit gets them.",
    ];
  }
  return [
    "# The host-agent mounts nothing here (its projects' disk use is measured), so it is sandboxed:",
    "# only its data and socket directories are writable. Homes stay readable (read-only), since",
    "# git credential files, SSH keys and the model keys file may live wherever the operator says.",
    "ProtectSystem=strict",
    `ReadWritePaths=${listPath(settings.dataDir, "the data directory")} ${listPath(settings.socketDir, "the socket directory")}`,
    "ProtectHome=read-only",
    "PrivateTmp=yes",
    "ProtectKernelTunables=yes",
    "ProtectKernelModules=yes",
    "ProtectControlGroups=yes",
  ];
}

function identity(settings: UnitSettings): string[] {
  if (settings.user === undefined)
    return [
      "# Runs as root: it needs the Docker socket, gives workspaces and socket directories to the",
      "# sessions' uids, and loop-mounts projects' volumes.",
    ];
  return [
    `# Runs as ${settings.user}, who must reach the Docker socket (the docker group) and own`,
    `# ${settings.dataDir} and ${settings.socketDir}. Not root, it cannot give workspaces to the`,
    "# sessions' uids nor mount volumes: workspace isolation is refused, disk use is measured.",
    `User=${settings.user}`,
  ];
}

/** The unit file's text. */
export function unitText(settings: UnitSettings): string {
  const lines = [
    "# Oubliette Edge host-agent.",
    `# Its settings, the host token among them, are in ${settings.envFile} (mode 0600); no secret is here.`,
    "[Unit]",
    "Description=Oubliette Edge host-agent",
    "After=network-online.target docker.service",
    "Wants=network-online.target",
    "",
    "[Service]",
    "Type=simple",
    `ExecStart=${execLine(settings.execStart)}`,
    ...Object.entries(HOST_AGENT_PROCESS_ENV).map(([name, value]) => `Environment=${name}=${value}`),
    `EnvironmentFile=${linePath(settings.envFile, "the environment file")}`,
    ...(settings.workingDirectory === undefined
      ? []
      : [`WorkingDirectory=${linePath(settings.workingDirectory, "the working directory")}`]),
    ...identity(settings),
    "Restart=always",
    "RestartSec=2",
    "# The droids' containers are Docker's, not in this unit's control group: stopping the",
    "# host-agent leaves them running, and the next start re-adopts them. What is in the group",
    "# (git, ssh, du, mount, droids of the process runtime) stops with it.",
    "KillMode=control-group",
    `TimeoutStopSec=${STOP_TIMEOUT_SECONDS}`,
    "# Not 0077: the images the host-agent builds keep the modes of the files it fetched, which the",
    "# containers' users must read. Its secrets and records are written with modes of their own.",
    "UMask=0022",
    ...HARDENING,
    ...sandbox(settings),
    "",
    "[Install]",
    "WantedBy=multi-user.target",
    "",
  ];
  return lines.join("\n");
}
