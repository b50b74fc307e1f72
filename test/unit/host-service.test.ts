/**
 * `host-agent service`'s files: systemd's quoting of tricky words, the host token only in the
 * environment file, the hardening each disk mode allows, and the files' modes on disk (the
 * environment file 0600 from its creation, refused when it exists unless forced). Where
 * `systemd-analyze` is installed, systemd itself reads the unit back (`verify`).
 */

import { spawnSync } from "node:child_process";
import {
  lstatSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { CliError } from "../../host-agent/src/cli/errors.js";
import { type ServiceInput, serviceFiles, writeServiceFiles } from "../../host-agent/src/cli/service.js";
import { envFileLine, execLine, execWord, listPath } from "../../host-agent/src/cli/systemd-syntax.js";
import { HOST_AGENT_NODE_FLAGS, HOST_AGENT_PROCESS_ENV } from "../../host-agent/src/node-flags.js";

const TOKEN = `oub_${"ab".repeat(32)}`;

function input(overrides: Partial<ServiceInput> = {}): ServiceInput {
  return {
    execStart: [process.execPath, "--max-semi-space-size=1", "/opt/oubliette/host-agent.mjs", "start"],
    envFile: "/etc/oubliette/host-agent.env",
    dataDir: "/var/lib/oubliette",
    socketDir: "/run/oubliette-sockets",
    env: {
      OUBLIETTE_HOST_TOKEN: TOKEN,
      OUBLIETTE_WORKER_URL: "https://oubliette.example.workers.dev",
      OUBLIETTE_HOST_ID: "builder-1",
    },
    ...overrides,
  };
}

function cliError(run: () => unknown): CliError {
  try {
    run();
  } catch (error) {
    expect(error).toBeInstanceOf(CliError);
    return error as CliError;
  }
  throw new Error("expected a CliError");
}

/** The `Key=` lines of a unit (comments left out). */
function settings(unit: string): string[] {
  return unit.split("\n").filter((line) => /^[A-Za-z]+=/.test(line));
}

describe("systemd quoting", () => {
  it("writes plain words as they are and quotes every other word", () => {
    expect(execWord("/usr/bin/node")).toBe("/usr/bin/node");
    expect(execWord("--max-semi-space-size=1")).toBe("--max-semi-space-size=1");
    expect(execWord("a b")).toBe('"a b"');
    expect(execWord("")).toBe('""');
    // A lone semicolon would separate two commands; quoted it is an argument.
    expect(execWord(";")).toBe('";"');
    expect(execWord("it's")).toBe(`"it's"`);
  });

  it("escapes specifiers, variables, backslashes, quotes and control characters", () => {
    expect(execWord("100%")).toBe('"100%%"');
    expect(execWord("%h")).toBe('"%%h"');
    expect(execWord("$HOME")).toBe('"$$HOME"');
    // biome-ignore lint/suspicious/noTemplateCurlyInString: a literal ${X} is the point
    expect(execWord("${X}")).toBe('"$${X}"');
    expect(execWord("back\\slash")).toBe('"back\\\\slash"');
    expect(execWord('say "hi"')).toBe('"say \\"hi\\""');
    expect(execWord("tab\there")).toBe('"tab\\x09here"');
    expect(execWord("ünïcode ✓")).toBe('"ünïcode ✓"');
  });

  it("refuses what systemd cannot hold", () => {
    expect(cliError(() => execWord("nul\0")).code).toBe("invalid_service_input");
    expect(cliError(() => execWord("half \uD800")).message).toContain("well-formed");
    expect(cliError(() => execLine([])).message).toContain("empty");
    expect(cliError(() => execLine(["node", "main.mjs"])).message).toContain("absolute");
  });

  it("quotes list paths without turning $ into $$ (no variables there)", () => {
    expect(listPath("/srv/oubliette $data 100%", "the data directory")).toBe('"/srv/oubliette $data 100%%"');
    expect(cliError(() => listPath("relative/dir", "the data directory")).message).toContain("absolute");
    expect(cliError(() => listPath("/a/../b", "the data directory")).message).toContain("normal path");
    expect(cliError(() => listPath("/a\\b", "the data directory")).message).toContain("backslashes");
  });

  it("writes environment file values double-quoted, as systemd writes them itself", () => {
    expect(envFileLine("A", "plain")).toBe('A="plain"');
    expect(envFileLine("A", "a 'b' #c")).toBe(`A="a 'b' #c"`);
    expect(envFileLine("A", 'q"uote \\ `tick` $HOME')).toBe('A="q\\"uote \\\\ \\`tick\\` \\$HOME"');
    expect(envFileLine("A", "")).toBe('A=""');
    expect(cliError(() => envFileLine("1A", "x")).message).toContain("not an environment variable name");
    const broken = cliError(() => envFileLine("SECRET", "line\nbreak-secret-value"));
    expect(broken.message).toContain("SECRET");
    expect(broken.message).not.toContain("secret-value");
  });
});

describe("serviceFiles", () => {
  it("starts the host-agent with one malloc arena, as every other way of running it does", () => {
    const { unit } = serviceFiles(input());
    expect(unit).toContain("\nEnvironment=MALLOC_ARENA_MAX=1\n");
    expect(HOST_AGENT_PROCESS_ENV).toEqual({ MALLOC_ARENA_MAX: "1" });
  });

  it("is what `npm run host-agent` runs with too: the same V8 flags and environment", () => {
    const packageJson = JSON.parse(readFileSync(new URL("../../package.json", import.meta.url), "utf8")) as {
      scripts: Record<string, string>;
    };
    const environment = Object.entries(HOST_AGENT_PROCESS_ENV).map(([name, value]) => `${name}=${value}`);
    expect(packageJson.scripts["host-agent"]).toBe(
      `${environment.join(" ")} node ${HOST_AGENT_NODE_FLAGS.join(" ")} --import tsx host-agent/src/main.ts`,
    );
  });

  it("puts the token in the environment file only", () => {
    const files = serviceFiles(input());
    expect(files.env).toContain(`OUBLIETTE_HOST_TOKEN="${TOKEN}"`);
    expect(files.unit).not.toContain(TOKEN);
    expect(files.unit).not.toContain("OUBLIETTE_HOST_TOKEN=");
    expect(files.unit).toContain("EnvironmentFile=/etc/oubliette/host-agent.env\n");
    // The unit's writable directories are the host-agent's, by way of the environment file.
    expect(files.env).toContain('OUBLIETTE_DATA_DIR="/var/lib/oubliette"');
    expect(files.env).toContain('OUBLIETTE_SOCKET_DIR="/run/oubliette-sockets"');
    expect(files.env).toContain('OUBLIETTE_WORKER_URL="https://oubliette.example.workers.dev"');
  });

  it("refuses a command line that carries the token, and never repeats it", () => {
    for (const execStart of [
      [process.execPath, "main.mjs", "--host-token", TOKEN],
      [process.execPath, "main.mjs", `--host-token=${TOKEN}`],
      [process.execPath, "main.mjs", `--something=${TOKEN}`],
    ]) {
      const error = cliError(() => serviceFiles(input({ execStart })));
      expect(error.code).toBe("invalid_service_input");
      expect(error.message).not.toContain(TOKEN);
    }
  });

  it("refuses flags that would override what the unit is made for", () => {
    for (const flag of ["--data-dir", "--socket-dir", "--disk-mode"]) {
      const error = cliError(() =>
        serviceFiles(input({ execStart: [process.execPath, "main.mjs", flag, "x"] })),
      );
      expect(error.message).toContain(flag);
    }
    const conflicting = cliError(() =>
      serviceFiles(input({ env: { ...input().env, OUBLIETTE_DATA_DIR: "/srv/elsewhere" } })),
    );
    expect(conflicting.message).toContain("OUBLIETTE_DATA_DIR");
  });

  it("needs the token, and lasting directories outside /tmp", () => {
    expect(cliError(() => serviceFiles(input({ env: {} }))).message).toContain("OUBLIETTE_HOST_TOKEN");
    expect(cliError(() => serviceFiles(input({ env: { OUBLIETTE_HOST_TOKEN: "short" } }))).message).toContain(
      "too short",
    );
    expect(cliError(() => serviceFiles(input({ dataDir: "/tmp/oubliette-data" }))).message).toContain(
      "under /tmp",
    );
    expect(cliError(() => serviceFiles(input({ socketDir: "/var/tmp/s" }))).message).toContain(
      "under /var/tmp",
    );
    expect(cliError(() => serviceFiles(input({ user: "bad user" }))).message).toContain("user name");
  });

  it("runs as root with the hardening that needs no mount namespace while volumes are loop-mounted", () => {
    const lines = settings(serviceFiles(input()).unit);
    expect(lines).toEqual(
      expect.arrayContaining([
        "Type=simple",
        "Restart=always",
        "RestartSec=2",
        "KillMode=control-group",
        "TimeoutStopSec=30",
        "UMask=0022",
        "NoNewPrivileges=yes",
        "LockPersonality=yes",
        "RestrictRealtime=yes",
        "SystemCallArchitectures=native",
        "After=network-online.target docker.service",
        "Wants=network-online.target",
        "WantedBy=multi-user.target",
      ]),
    );
    // Each of these would hide the host-agent's loop mounts from the Docker Engine.
    for (const key of [
      "ProtectSystem",
      "ProtectHome",
      "PrivateTmp",
      "ReadWritePaths",
      "ProtectKernelTunables",
      "ProtectKernelModules",
      "ProtectControlGroups",
      "RestrictSUIDSGID",
      "User",
    ])
      expect(lines.some((line) => line.startsWith(`${key}=`))).toBe(false);
  });

  it("sandboxes the filesystem when disk use is measured (nothing mounted)", () => {
    const files = serviceFiles(input({ env: { ...input().env, OUBLIETTE_DISK_MODE: "measured" } }));
    expect(settings(files.unit)).toEqual(
      expect.arrayContaining([
        "ProtectSystem=strict",
        'ReadWritePaths="/var/lib/oubliette" "/run/oubliette-sockets"',
        "ProtectHome=read-only",
        "PrivateTmp=yes",
        "ProtectKernelTunables=yes",
        "ProtectKernelModules=yes",
        "ProtectControlGroups=yes",
      ]),
    );
    expect(files.directories).toEqual([
      { path: "/var/lib/oubliette", mode: 0o700 },
      { path: "/run/oubliette-sockets", mode: 0o711 },
    ]);
  });

  it("sandboxes a non-root user (who cannot mount) and leaves its directories to it", () => {
    const files = serviceFiles(input({ user: "oubliette" }));
    expect(settings(files.unit)).toEqual(expect.arrayContaining(["User=oubliette", "ProtectSystem=strict"]));
    expect(files.directories).toEqual([]);
    expect(settings(serviceFiles(input({ user: "root" })).unit).some((l) => l.startsWith("User="))).toBe(
      false,
    );
  });

  it("escapes the command line, the paths and the working directory", () => {
    const files = serviceFiles(
      input({
        execStart: [process.execPath, "/opt/oubliette edge/host-agent.mjs", "start", "--image", "img:100%"],
        workingDirectory: "/opt/oubliette edge",
        envFile: "/etc/oubliette/50%.env",
        dataDir: "/srv/data 1",
        env: { ...input().env, OUBLIETTE_DISK_MODE: "measured" },
      }),
    );
    const lines = settings(files.unit);
    expect(lines).toContain(
      `ExecStart=${process.execPath} "/opt/oubliette edge/host-agent.mjs" start --image "img:100%%"`,
    );
    expect(lines).toContain("WorkingDirectory=/opt/oubliette edge");
    expect(lines).toContain("EnvironmentFile=/etc/oubliette/50%%.env");
    expect(lines).toContain('ReadWritePaths="/srv/data 1" "/run/oubliette-sockets"');
  });
});

describe("writeServiceFiles", () => {
  let dir: string;
  let umask: number;

  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), "host-service-"));
    // The most permissive umask: the modes must come from the writer, not from the umask.
    umask = process.umask(0);
  });

  afterEach(() => {
    process.umask(umask);
    rmSync(dir, { recursive: true, force: true });
  });

  const paths = () => ({
    unitPath: join(dir, "systemd", "oubliette-host-agent.service"),
    envPath: join(dir, "etc", "host-agent.env"),
  });
  const filesFor = (envPath: string) => ({
    ...serviceFiles(input({ envFile: envPath })),
    directories: [
      { path: join(dir, "data"), mode: 0o700 },
      { path: join(dir, "sockets"), mode: 0o711 },
    ],
  });
  const mode = (path: string) => statSync(path).mode & 0o7777;

  it("writes the environment file 0600, the unit 0644, and the missing directories", async () => {
    const { unitPath, envPath } = paths();
    const files = filesFor(envPath);
    await writeServiceFiles({ unitPath, envPath, files });
    expect(mode(envPath)).toBe(0o600);
    expect(mode(unitPath)).toBe(0o644);
    expect(mode(join(dir, "etc"))).toBe(0o700);
    expect(mode(join(dir, "data"))).toBe(0o700);
    expect(mode(join(dir, "sockets"))).toBe(0o711);
    expect(readFileSync(envPath, "utf8")).toBe(files.env);
    expect(readFileSync(unitPath, "utf8")).toBe(files.unit);
    // No temporary file is left behind.
    expect(readdirSync(join(dir, "etc"))).toEqual(["host-agent.env"]);
  });

  it("refuses to overwrite an environment file, before writing anything", async () => {
    const { unitPath, envPath } = paths();
    await writeServiceFiles({ unitPath, envPath, files: filesFor(envPath) });
    writeFileSync(envPath, "OUBLIETTE_HOST_TOKEN=old\n");
    rmSync(unitPath);
    const refused = await writeServiceFiles({ unitPath, envPath, files: filesFor(envPath) }).catch((e) => e);
    expect(refused).toBeInstanceOf(CliError);
    expect(refused.code).toBe("env_file_exists");
    expect(refused.message).not.toContain(TOKEN);
    expect(readFileSync(envPath, "utf8")).toBe("OUBLIETTE_HOST_TOKEN=old\n");
    expect(() => statSync(unitPath)).toThrow();
    expect(readdirSync(join(dir, "etc"))).toEqual(["host-agent.env"]);
  });

  it("with force, replaces the file itself: a readable old one does not keep its mode", async () => {
    const { unitPath, envPath } = paths();
    await writeServiceFiles({ unitPath, envPath, files: filesFor(envPath) });
    writeFileSync(envPath, "OLD=1\n", { mode: 0o644 });
    const before = statSync(envPath).ino;
    await writeServiceFiles({ unitPath, envPath, files: filesFor(envPath), force: true });
    expect(mode(envPath)).toBe(0o600);
    expect(statSync(envPath).ino).not.toBe(before);
    expect(readFileSync(envPath, "utf8")).toContain(TOKEN);
  });

  it("never writes through a symlink at the environment file's path", async () => {
    const { unitPath, envPath } = paths();
    await writeServiceFiles({ unitPath, envPath, files: filesFor(envPath) });
    rmSync(envPath);
    const elsewhere = join(dir, "elsewhere");
    writeFileSync(elsewhere, "untouched\n", { mode: 0o644 });
    symlinkSync(elsewhere, envPath);
    const refused = await writeServiceFiles({ unitPath, envPath, files: filesFor(envPath) }).catch((e) => e);
    expect(refused.code).toBe("env_file_exists");
    await writeServiceFiles({ unitPath, envPath, files: filesFor(envPath), force: true });
    expect(lstatSync(envPath).isSymbolicLink()).toBe(false);
    expect(readFileSync(elsewhere, "utf8")).toBe("untouched\n");
    expect(mode(envPath)).toBe(0o600);
  });

  it("refuses a unit that reads another environment file", async () => {
    const { unitPath, envPath } = paths();
    const refused = await writeServiceFiles({
      unitPath,
      envPath,
      files: filesFor(join(dir, "other.env")),
    }).catch((e) => e);
    expect(refused.code).toBe("env_path_mismatch");
    expect(() => statSync(envPath)).toThrow();
  });
});

const analyze = spawnSync("systemd-analyze", ["--version"], { encoding: "utf8" });
const hasAnalyze = analyze.status === 0;
if (!hasAnalyze)
  // Said once, plainly: the checks below need systemd's own reader (Debian: apt-get install systemd).
  console.warn(
    "host-service: systemd-analyze is not installed; `systemd-analyze verify` of the unit is skipped",
  );

describe.skipIf(!hasAnalyze)("systemd-analyze verify (systemd reads the unit back)", () => {
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), "host-service-verify-"));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  const cases: [string, Partial<ServiceInput>][] = [
    ["root, loop-mounted volumes", {}],
    ["measured disk use, sandboxed", { env: { ...input().env, OUBLIETTE_DISK_MODE: "measured" } }],
    [
      "another user, tricky words",
      {
        user: "oubliette",
        workingDirectory: "/opt/oubliette edge",
        execStart: [
          process.execPath,
          "/opt/oubliette edge/host-agent.mjs",
          "start",
          "100%",
          "$HOME",
          // biome-ignore lint/suspicious/noTemplateCurlyInString: a literal ${X} is the point
          "${X}",
          "back\\slash",
          'q"uote',
          "it's",
          ";",
          "",
          "tab\there",
        ],
        dataDir: "/srv/oubliette 100%",
      },
    ],
  ];

  it.each(cases)("accepts the unit without a warning: %s", async (_name, overrides) => {
    const unitPath = join(dir, "oubliette-host-agent.service");
    const envPath = join(dir, "host-agent.env");
    const files = { ...serviceFiles(input({ ...overrides, envFile: envPath })), directories: [] };
    await writeServiceFiles({ unitPath, envPath, files });
    const run = spawnSync("systemd-analyze", ["verify", "--man=no", unitPath], { encoding: "utf8" });
    // verify exits 0 on warnings it "ignores" (an unknown key, a bad escape): any line about the unit fails.
    const aboutUnit = `${run.stdout}\n${run.stderr}`
      .split("\n")
      .filter((line) => line.includes("oubliette-host-agent") || line.includes(dir));
    expect({ status: run.status, aboutUnit }).toEqual({ status: 0, aboutUnit: [] });
  });
});
