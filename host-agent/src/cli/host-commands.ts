/**
 * `host-agent doctor` and `host-agent service`: they take the same settings as `start` (flags or
 * environment), so what doctor checks and what the service runs with is what `start` would use.
 */
import { type Command, Option } from "commander";
import { hostAgentFile } from "../bundles/droid-bundles.js";
import type { HostAgentConfig } from "../config.js";
import { HOST_AGENT_NODE_FLAGS } from "../node-flags.js";
import { formatFindings, runDoctor } from "./doctor.js";
import { buildImages, parseAgents } from "./images-command.js";
import { serviceFiles, writeServiceFiles } from "./service.js";
import { settingsAsEnv } from "./settings-env.js";
import { addStartOptions, parseStartConfig } from "./start-options.js";
import { enableNow } from "./systemctl.js";

const DEFAULT_UNIT = "/etc/systemd/system/oubliette-host-agent.service";
const DEFAULT_ENV_FILE = "/etc/oubliette/host-agent.env";
const DEFAULT_SERVICE_DATA_DIR = "/var/lib/oubliette";
const DEFAULT_SERVICE_SOCKET_DIR = "/run/oubliette";

/** The settings `flags` give, or the messages saying what is wrong (then the process exits 2). */
function settingsOrExit(flags: Record<string, unknown>, command: string): HostAgentConfig {
  const parsed = parseStartConfig(flags);
  if (parsed.ok) return parsed.config;
  for (const message of parsed.messages) process.stderr.write(`host-agent: ${message}\n`);
  process.stderr.write(`host-agent: see host-agent ${command} --help\n`);
  process.exit(2);
}

export function doctorCommand(program: Command): Command {
  const command = addStartOptions(
    program
      .command("doctor")
      .description(
        "check this host: Docker, the Worker reachable, the host token valid for this host id, the socket and data directories, the keys files; prints what to fix",
      ),
  );
  return command.action(async (flags: Record<string, unknown>) => {
    const config = settingsOrExit(flags, "doctor");
    const findings = await runDoctor({
      workerUrl: config.workerUrl,
      hostToken: config.hostToken,
      hostId: config.hostId,
      socketDir: config.socketDir,
      dataDir: config.dataDir,
      modelKeys: config.modelKeys,
      gitCredentials: config.gitCredentials,
      runtime: config.runtime,
    });
    process.stdout.write(`${formatFindings(findings)}\n`);
    process.exitCode = findings.every((f) => f.ok) ? 0 : 1;
  });
}

export function serviceCommand(program: Command): Command {
  const command = addStartOptions(
    program
      .command("service")
      .description(
        "write a systemd unit that runs this host-agent (Restart=always, hardened) and its environment file (mode 0600, with the host token)",
      ),
  )
    .addOption(new Option("--unit <path>", "the unit file to write").default(DEFAULT_UNIT))
    // Not --env-file: Node reads that flag as its own wherever it appears on the command line.
    .addOption(
      new Option("--environment-file <path>", "the environment file to write (it holds the token)").default(
        DEFAULT_ENV_FILE,
      ),
    )
    .addOption(
      new Option(
        "--user <name>",
        "run as this user instead of root (no workspace isolation, no disk bounds)",
      ),
    )
    .addOption(new Option("--force", "replace an existing environment file"))
    .addOption(
      new Option("--now", "then reload systemd and enable and start the service (systemctl enable --now)"),
    )
    .addOption(
      new Option(
        "--images [agents]",
        "first build the images sessions run in, as `images --agents` does (comma-separated, all, none; default all)",
      ),
    )
    .addOption(
      new Option(
        "--print",
        "print the unit and what the environment file would hold (token hidden) instead of writing them",
      ),
    );
  return command.action(async (flags: Record<string, unknown>) => {
    // A service keeps its data: default directories that last, not the temporary ones of `start`.
    const withDirs = {
      ...flags,
      dataDir: flags.dataDir ?? DEFAULT_SERVICE_DATA_DIR,
      socketDir: flags.socketDir ?? DEFAULT_SERVICE_SOCKET_DIR,
    };
    const config = settingsOrExit(withDirs, "service");
    const env = settingsAsEnv(command, withDirs);
    const files = serviceFiles({
      execStart: [process.execPath, ...HOST_AGENT_NODE_FLAGS, hostAgentFile(), "start"],
      envFile: String(flags.environmentFile),
      ...(typeof flags.user === "string" ? { user: flags.user } : {}),
      dataDir: config.dataDir,
      socketDir: config.socketDir,
      env: { ...env, OUBLIETTE_HOST_TOKEN: config.hostToken },
    });
    if (flags.print === true) {
      process.stdout.write(
        `# ${String(flags.unit)}\n${files.unit}\n# ${String(flags.environmentFile)} (mode 0600)\n`,
      );
      process.stdout.write(files.env.replace(/^OUBLIETTE_HOST_TOKEN=.*$/m, "OUBLIETTE_HOST_TOKEN=<hidden>"));
      return;
    }
    // Before anything is written: a host whose images cannot be built is not ready to serve.
    if (flags.images !== undefined) {
      const agents = parseAgents(flags.images === true ? "all" : String(flags.images));
      const tags = await buildImages({
        agents,
        dataDir: config.dataDir,
        log: (line) => process.stderr.write(`${line}\n`),
      });
      process.stdout.write(`images: ${Object.values(tags).join(", ")}\n`);
    }
    await writeServiceFiles({
      unitPath: String(flags.unit),
      envPath: String(flags.environmentFile),
      files,
      force: flags.force === true,
    });
    const name = String(flags.unit).split("/").pop() ?? "oubliette-host-agent.service";
    process.stdout.write(`wrote ${String(flags.unit)} and ${String(flags.environmentFile)} (mode 0600)\n`);
    if (flags.now !== true) {
      process.stdout.write(`now: systemctl daemon-reload && systemctl enable --now ${name}\n`);
      return;
    }
    await enableNow(name);
    process.stdout.write(`started ${name} (and enabled at boot); check it with: host-agent doctor\n`);
  });
}
