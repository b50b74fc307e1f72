import { hostname, tmpdir } from "node:os";
import { join } from "node:path";
import { z } from "zod";
import { DEFAULT_DISK_SETTINGS } from "./disk/disk-settings.js";

/** host-agent settings, from flags or their environment variables (flags win). */
export const HostAgentConfigSchema = z
  .object({
    workerUrl: z.url({
      protocol: /^https?$/,
      error: (issue) =>
        issue.input === undefined
          ? "--worker-url is required (or OUBLIETTE_WORKER_URL)"
          : "--worker-url must be an http(s) URL",
    }),
    hostToken: z
      .string({ error: "--host-token is required (or OUBLIETTE_HOST_TOKEN)" })
      .min(8, "--host-token is too short to be a token"),
    hostId: z
      .string()
      .regex(/^[A-Za-z0-9_.-]{1,128}$/, "--host-id must be 1-128 letters, digits, '_', '.' or '-'")
      .default(
        () =>
          hostname()
            .replace(/[^A-Za-z0-9_.-]/g, "-")
            .slice(0, 128) || "host",
      ),
    runtime: z.enum(["auto", "docker", "process"]).default("auto"),
    image: z.string().min(1).default("oubliette/droid:dev"),
    /** The agent the runner starts: given explicitly (both runtimes), or the scripted droid (process runtime). */
    agentCommand: z.array(z.string().min(1)).min(1).optional(),
    defaultAgentCommand: z.array(z.string().min(1)).min(1).optional(),
    /** The runner (process runtime): the container-client bundle in runner mode. */
    runnerCommand: z.array(z.string().min(1)).min(1).optional(),
    socketDir: z
      .string()
      .min(1)
      .default(() => join(tmpdir(), "oubliette-sockets")),
    /** Project data (records, workspaces): `<data-dir>/projects/<id>`. Keep it across restarts. */
    dataDir: z
      .string()
      .min(1)
      .default(() => join(tmpdir(), "oubliette-data")),
    /** Where agent CLIs are fetched to (for images that are not ours); default: under the data directory. */
    cliCache: z.string().min(1).optional(),
    /** Whether a project's image the engine lacks is pulled from its registry (Docker). */
    imagePull: z.enum(["missing", "never"]).default("missing"),
    maxSessions: z.coerce.number().int().positive().default(32),
    maxProjects: z.coerce.number().int().positive().default(16),
    heartbeatMs: z.coerce.number().int().min(100).default(15_000),
    reconnectMaxMs: z.coerce.number().int().min(100).default(30_000),
    /** How projects' disk use is bounded (see disk/disk-settings.ts); auto: filesystem where it works. */
    diskMode: z.enum(["auto", "filesystem", "measured"]).default("auto"),
    /** A project's disk bound when it names none (MiB). */
    diskMb: z.coerce.number().int().min(64).default(DEFAULT_DISK_SETTINGS.defaultMb),
    /** How often running projects' disk use is measured (ms; at most 10 s). */
    diskCheckMs: z.coerce.number().int().min(100).max(10_000).default(DEFAULT_DISK_SETTINGS.checkMs),
    /** No new work while the data directory's disk has less free (MiB). */
    minFreeDiskMb: z.coerce.number().int().min(0).default(DEFAULT_DISK_SETTINGS.minFreeMb),
    /** Each container's in-memory /tmp (MiB). */
    tmpMb: z.coerce.number().int().min(1).max(65_536).default(DEFAULT_DISK_SETTINGS.tmpMb),
    /** A JSON file of model provider keys (see models/model-keys.ts). */
    modelKeys: z.string().min(1).optional(),
    /** A JSON file of git credentials by name (see git/git-credentials.ts). */
    gitCredentials: z.string().min(1).optional(),
    /** Let the host's git reach http://, file:// and non-public addresses (see git/remote-policy.ts). */
    gitAllowLocalRemotes: z
      .union([z.boolean(), z.enum(["1", "true", "0", "false", ""])], {
        error: "OUBLIETTE_GIT_ALLOW_LOCAL_REMOTES must be 1, true, 0 or false",
      })
      .transform((v) => v === true || v === "1" || v === "true")
      .default(false),
    /**
     * The TCP connection hash each new container's network namespace gets (see
     * runtime/container-ehash.ts); 0 leaves the kernel's setting alone.
     */
    containerEhashEntries: z.coerce.number().int().min(0).max(1_048_576).default(4096),
    /**
     * Test only: names the egress gate resolves to a loopback address of this machine, and lets
     * through to it (`name=127.0.0.1,other=::1`); refused unless the Worker itself is on loopback.
     */
    egressTestResolve: z
      .string()
      .default("")
      .transform((value, ctx) => {
        const names = new Map<string, string>();
        for (const entry of value
          .split(",")
          .map((part) => part.trim())
          .filter((part) => part !== "")) {
          const parsed = parseTestResolve(entry);
          if (typeof parsed === "string")
            ctx.addIssue({ code: "custom", message: `--egress-test-resolve: ${parsed}` });
          else names.set(parsed.name, parsed.address);
        }
        return names;
      }),
    logLevel: z.enum(["trace", "debug", "info", "warn", "error"]).default("info"),
  })
  .superRefine((config, ctx) => {
    if (config.egressTestResolve.size > 0 && !isLoopbackUrl(config.workerUrl))
      ctx.addIssue({
        code: "custom",
        message:
          "--egress-test-resolve is for tests on one machine: it is refused unless --worker-url is on loopback",
      });
  });
export type HostAgentConfig = z.infer<typeof HostAgentConfigSchema>;

const TEST_NAME = /^(?!-)[a-z0-9-]{1,63}(?:\.(?!-)[a-z0-9-]{1,63})+$/;

/** One `name=address` of --egress-test-resolve: a dotted name and a loopback address. */
export function parseTestResolve(entry: string): { name: string; address: string } | string {
  const [name = "", address = "", ...rest] = entry.split("=");
  if (rest.length > 0 || !TEST_NAME.test(name.toLowerCase())) return `${entry} is not name=address`;
  const loopback = address === "::1" || /^127\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})$/.test(address);
  if (!loopback) return `${entry}: the address must be a loopback one (127.x.y.z or ::1)`;
  return { name: name.toLowerCase(), address };
}

function isLoopbackUrl(url: string): boolean {
  try {
    const host = new URL(url).hostname.replace(/^\[|\]$/g, "");
    return host === "localhost" || host === "::1" || /^127\./.test(host);
  } catch {
    return false;
  }
}
