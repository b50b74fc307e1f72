/**
 * What runs the host-agent as a systemd service: its unit, and its environment file (the host
 * token and every other setting). `serviceFiles` says what they hold; `writeServiceFiles` puts
 * them in place (the environment file is born mode 0600 and is replaced only when told to).
 */
import { CliError } from "./errors.js";
import { makeDirectory, writeFileAtomically } from "./file-write.js";
import { checkCommandLine, envFileText, HOST_TOKEN_ENV } from "./service-env.js";
import { unitText } from "./service-unit.js";
import { checkPath, linePath } from "./systemd-syntax.js";

export interface ServiceInput {
  /** The host-agent's command line: an absolute program (node), then its arguments. No secrets. */
  execStart: string[];
  /** Where the environment file goes (the unit's `EnvironmentFile=`). */
  envFile: string;
  workingDirectory?: string;
  /** Run as this user instead of root (the host-agent then cannot isolate workspaces or mount). */
  user?: string;
  dataDir: string;
  socketDir: string;
  /** The host-agent's settings by variable name; must hold OUBLIETTE_HOST_TOKEN. */
  env: Record<string, string>;
}

/** A directory the service needs before it starts (`ReadWritePaths=` refuses to start without it). */
export interface ServiceDirectory {
  path: string;
  mode: number;
}

export interface ServiceFiles {
  unit: string;
  env: string;
  /** Made by `writeServiceFiles` when missing (root's, with the modes the host-agent gives them). */
  directories: ServiceDirectory[];
}

/** Directories systemd empties on its own (tmpfiles) or hides from a PrivateTmp= service. */
const TEMPORARY_DIRS = ["/tmp", "/var/tmp"];

/** A user name systemd takes as it is (or a uid). */
const USER_NAME = /^(?:[A-Za-z_][A-Za-z0-9_.-]{0,31}|\d{1,10})$/;

function lastingDir(path: string, what: string): string {
  checkPath(path, what);
  for (const tmp of TEMPORARY_DIRS)
    if (path === tmp || path.startsWith(`${tmp}/`))
      throw new CliError(
        "invalid_service_input",
        `${what} ${path} is under ${tmp}, which is cleaned and private to the service: choose a lasting one (e.g. /var/lib/oubliette)`,
      );
  return path;
}

/** The unit and environment file for `input` (pure: nothing is read or written). */
export function serviceFiles(input: ServiceInput): ServiceFiles {
  const dataDir = lastingDir(input.dataDir, "the data directory");
  const socketDir = lastingDir(input.socketDir, "the socket directory");
  checkPath(input.envFile, "the environment file");
  if (input.workingDirectory !== undefined) checkPath(input.workingDirectory, "the working directory");
  if (input.user !== undefined && !USER_NAME.test(input.user))
    throw new CliError("invalid_service_input", `${input.user} is not a user name systemd takes`);
  const env = envFileText(input.env, { dataDir, socketDir });
  checkCommandLine(input.execStart, input.env[HOST_TOKEN_ENV] as string);

  const user = input.user === "root" || input.user === "0" ? undefined : input.user;
  // Only a root host-agent loop-mounts volumes, and not when told to measure disk use instead.
  const mountsVolumes = user === undefined && input.env.OUBLIETTE_DISK_MODE !== "measured";
  const unit = unitText({
    execStart: input.execStart,
    envFile: input.envFile,
    workingDirectory: input.workingDirectory,
    user,
    dataDir,
    socketDir,
    sandboxed: !mountsVolumes,
  });
  // The modes the host-agent gives them at start. Another user's directories are theirs to make
  // (root's would not do).
  const directories =
    user === undefined
      ? [
          { path: dataDir, mode: 0o700 },
          { path: socketDir, mode: 0o711 },
        ]
      : [];
  return { unit, env, directories };
}

export interface WriteServiceInput {
  unitPath: string;
  envPath: string;
  files: ServiceFiles;
  /** Replace an existing environment file (it holds the host token: never by default). */
  force?: boolean;
}

/**
 * Writes the environment file (mode 0600 from its creation) and then the unit (0644), and makes
 * the service's missing directories. An existing environment file is refused with
 * `env_file_exists` unless `force`, before anything is written.
 */
export async function writeServiceFiles(input: WriteServiceInput): Promise<void> {
  const { files } = input;
  checkPath(input.envPath, "the environment file");
  if (!files.unit.split("\n").includes(`EnvironmentFile=${linePath(input.envPath, "the environment file")}`))
    throw new CliError(
      "env_path_mismatch",
      `the unit reads another environment file than ${input.envPath}: make both from the same settings`,
    );
  // The token file's directory, when it has to be made, is root's alone (an existing one is left as it is).
  await writeFileAtomically(input.envPath, files.env, {
    mode: 0o600,
    replace: input.force === true,
    dirMode: 0o700,
    onExists: () =>
      new CliError(
        "env_file_exists",
        `${input.envPath} exists (it holds the host token); pass --force to replace it`,
      ),
  });
  await writeFileAtomically(input.unitPath, files.unit, { mode: 0o644, replace: true, dirMode: 0o755 });
  for (const dir of files.directories) await makeDirectory(dir.path, dir.mode);
}
