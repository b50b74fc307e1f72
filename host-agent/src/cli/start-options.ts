/**
 * The settings of a host-agent (`start`, and what `doctor` and `service` check and write): each a
 * flag and its environment variable (flags win), parsed into HostAgentConfig (config.ts).
 */
import { type Command, Option } from "commander";
import { type HostAgentConfig, HostAgentConfigSchema } from "../config.js";
import type { DroidBundles } from "../images/images.js";

function parseCommand(value: string): string[] {
  try {
    const parsed: unknown = JSON.parse(value);
    if (Array.isArray(parsed) && parsed.every((p) => typeof p === "string")) return parsed;
  } catch {
    // fall through to the error below
  }
  throw new Error('--agent-command must be a JSON array of strings, e.g. ["node","droid.mjs"]');
}

/** Adds every host-agent setting to `command`. */
export function addStartOptions(command: Command): Command {
  return command
    .addOption(new Option("--worker-url <url>", "URL of the Oubliette Worker").env("OUBLIETTE_WORKER_URL"))
    .addOption(
      new Option("--host-token <token>", "host token the Worker accepts").env("OUBLIETTE_HOST_TOKEN"),
    )
    .addOption(new Option("--host-id <id>", "name of this host (default: hostname)").env("OUBLIETTE_HOST_ID"))
    .addOption(
      new Option("--runtime <kind>", "where droids run")
        .choices(["auto", "docker", "process"])
        .env("OUBLIETTE_RUNTIME"),
    )
    .addOption(
      new Option("--image <image>", "Docker image for sessions (default oubliette/droid:dev)").env(
        "OUBLIETTE_IMAGE",
      ),
    )
    .addOption(
      new Option(
        "--image-pull <policy>",
        "a project's image the Docker Engine lacks: missing = pull it from its registry (the default), never = refuse it",
      )
        .choices(["missing", "never"])
        .env("OUBLIETTE_IMAGE_PULL"),
    )
    .addOption(
      new Option("--agent-command <json>", "process runtime: the agent program, as a JSON array")
        .env("OUBLIETTE_AGENT_COMMAND")
        .argParser(parseCommand),
    )
    .addOption(
      new Option("--socket-dir <dir>", "where per-project socket directories go").env("OUBLIETTE_SOCKET_DIR"),
    )
    .addOption(
      new Option("--data-dir <dir>", "where project workspaces and records go").env("OUBLIETTE_DATA_DIR"),
    )
    .addOption(
      new Option(
        "--cli-cache <dir>",
        "where agent CLIs are fetched to for projects in images that are not ours (default: <data-dir>/cache/agent-cli)",
      ).env("OUBLIETTE_CLI_CACHE"),
    )
    .addOption(
      new Option("--max-sessions <n>", "most sessions this host runs at once").env("OUBLIETTE_MAX_SESSIONS"),
    )
    .addOption(
      new Option("--max-projects <n>", "most project containers this host runs at once").env(
        "OUBLIETTE_MAX_PROJECTS",
      ),
    )
    .addOption(new Option("--heartbeat-ms <ms>", "tunnel heartbeat period").env("OUBLIETTE_HEARTBEAT_MS"))
    .addOption(
      new Option("--reconnect-max-ms <ms>", "cap of the tunnel reconnect backoff").env(
        "OUBLIETTE_RECONNECT_MAX_MS",
      ),
    )
    .addOption(
      new Option(
        "--model-keys <file>",
        'model provider keys, JSON: {"anthropic":{"api_key":"…","base_url":"…"},…} (or OUBLIETTE_<PROVIDER>_API_KEY)',
      ).env("OUBLIETTE_MODEL_KEYS"),
    )
    .addOption(
      new Option(
        "--git-credentials <file>",
        'git credentials by name, JSON: {"github-acme":{"token":"…"}} or {"deploy-acme":{"ssh_key_file":"/abs/key","known_hosts_file":"/abs/known_hosts"}} (projects name one as git_credential)',
      ).env("OUBLIETTE_GIT_CREDENTIALS"),
    )
    .addOption(
      new Option(
        "--git-allow-local-remotes",
        "let git reach http://, file:// and loopback or private addresses (default: public https:// and ssh:// only; or OUBLIETTE_GIT_ALLOW_LOCAL_REMOTES=1)",
      ),
    )
    .addOption(
      new Option(
        "--disk-mode <mode>",
        "how projects' disk use is bounded: a loop-mounted filesystem each, or measured (auto: filesystem where it works)",
      )
        .choices(["auto", "filesystem", "measured"])
        .env("OUBLIETTE_DISK_MODE"),
    )
    .addOption(
      new Option("--disk-mb <mib>", "a project's disk bound when it names none (default 10240)").env(
        "OUBLIETTE_DISK_MB",
      ),
    )
    .addOption(
      new Option("--disk-check-ms <ms>", "how often projects' disk use is measured (≤ 10000)").env(
        "OUBLIETTE_DISK_CHECK_MS",
      ),
    )
    .addOption(
      new Option(
        "--min-free-disk-mb <mib>",
        "refuse new work while the data disk has less free (default 1024)",
      ).env("OUBLIETTE_MIN_FREE_DISK_MB"),
    )
    .addOption(
      new Option("--tmp-mb <mib>", "each container's in-memory /tmp (default 64)").env("OUBLIETTE_TMP_MB"),
    )
    .addOption(
      new Option(
        "--container-ehash-entries <n>",
        "the TCP connection hash of each new container's network namespace (the egress proxy reads it per connection); 0 leaves the kernel's setting (default 4096, set when root and unset)",
      ).env("OUBLIETTE_CONTAINER_EHASH_ENTRIES"),
    )
    .addOption(
      new Option(
        "--egress-test-resolve <name=address,...>",
        "tests on one machine: names the egress gate resolves to a loopback address and lets through (refused unless --worker-url is on loopback)",
      ).env("OUBLIETTE_EGRESS_TEST_RESOLVE"),
    )
    .addOption(new Option("--log-level <level>", "log level").env("OUBLIETTE_LOG_LEVEL"));
}

/** The settings `flags` (and their environment variables) give, or the messages saying what is wrong. */
export function parseStartConfig(
  flags: Record<string, unknown>,
): { ok: true; config: HostAgentConfig } | { ok: false; messages: string[] } {
  const parsed = HostAgentConfigSchema.safeParse({
    ...flags,
    // Read here, not by commander, which would take any value of the variable ("0" too) as yes.
    gitAllowLocalRemotes: flags.gitAllowLocalRemotes ?? process.env.OUBLIETTE_GIT_ALLOW_LOCAL_REMOTES,
  });
  return parsed.success
    ? { ok: true, config: parsed.data }
    : { ok: false, messages: parsed.error.issues.map((issue) => issue.message) };
}

/** The process runtime's runner and default agent: the container-side bundles, run by this Node. */
export function bundleCommands(
  bundles: DroidBundles,
): Pick<HostAgentConfig, "runnerCommand" | "defaultAgentCommand"> {
  return {
    runnerCommand: [process.execPath, bundles.containerClient, "runner"],
    defaultAgentCommand: [process.execPath, bundles.scriptedDroid],
  };
}
