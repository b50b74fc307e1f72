/**
 * A devcontainer.json's text (JSONC: comments and trailing commas, as the specification allows)
 * made into what the host honours of it (protocol/devcontainer.ts). Pure: nothing is read or run.
 * What it cannot honour is named in `not_honoured` and one warning, never silently dropped and
 * never granted; what it cannot work without (no image, a file that is not a JSON object) is
 * refused with a DevcontainerError saying why.
 */
import { type ParseError, parse, printParseErrorCode } from "jsonc-parser";
import {
  DEVCONTAINER_SETUP_COMMANDS,
  type DevcontainerEnvironment,
  DevcontainerEnvironmentSchema,
  MAX_DEVCONTAINER_BYTES,
} from "../../../protocol/devcontainer.js";
import type { SetupStep } from "../../../protocol/setup.js";

export class DevcontainerError extends Error {
  override readonly name = "DevcontainerError";
}

/** Properties read for what they say; everything else present is named as not honoured. */
const TAKEN = new Set<string>([
  "image",
  "containerEnv",
  "remoteEnv",
  "remoteUser",
  "containerUser",
  ...DEVCONTAINER_SETUP_COMMANDS,
]);

/** Properties that say nothing to a host (a name for people, the schema for editors). */
const DESCRIPTIVE = new Set(["name", "$schema"]);

/** Why some properties can never be honoured, for the warning. */
const REASONS: Record<string, string> = {
  initializeCommand: "it runs on the host",
  build: "images are not built from a repository",
  dockerFile: "images are not built from a repository",
  dockerComposeFile: "Compose is not run",
  features: "features are not installed",
  privileged: "containers are never privileged",
  capAdd: "no capability is added",
  securityOpt: "no security option is changed",
  runArgs: "the host decides how a container runs",
  mounts: "the host decides what is mounted",
  workspaceMount: "the host decides what is mounted",
  forwardPorts: "a container has no ports",
  appPort: "a container has no ports",
};

type Json = unknown;

function isRecord(value: Json): value is Record<string, Json> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** The line and column of `offset` in `text`, counted from 1. */
function lineAndColumn(text: string, offset: number): string {
  const before = text.slice(0, offset).split("\n");
  return `line ${before.length}, column ${(before.at(-1)?.length ?? 0) + 1}`;
}

/** A lifecycle command (string: a shell line; array: an argv; object: each of its commands) as setup steps. */
function commandSteps(name: string, value: Json): SetupStep[] {
  if (typeof value === "string") return value.trim() === "" ? [] : [value];
  if (Array.isArray(value)) {
    if (value.length === 0) return [];
    if (!value.every((part) => typeof part === "string"))
      throw new DevcontainerError(`${name}: an array command holds only strings`);
    return [value as string[]];
  }
  if (isRecord(value))
    return Object.entries(value).flatMap(([key, command]) => commandSteps(`${name}.${key}`, command));
  throw new DevcontainerError(`${name}: a command is a string, an array of strings or an object of commands`);
}

function stringRecord(name: string, value: Json): Record<string, string> {
  if (value === undefined) return {};
  if (!isRecord(value)) throw new DevcontainerError(`${name}: an object of names to strings`);
  const out: Record<string, string> = {};
  for (const [key, v] of Object.entries(value)) {
    if (typeof v !== "string") throw new DevcontainerError(`${name}.${key}: a string`);
    out[key] = v;
  }
  return out;
}

/**
 * The environment `text` (found at `path`) describes. Values with `${...}` variables (localEnv,
 * containerEnv, …) are kept as written and named in the warning: nothing of the host's
 * environment is substituted into a container.
 */
export function parseDevcontainer(
  path: DevcontainerEnvironment["path"],
  text: string,
): DevcontainerEnvironment {
  const bytes = Buffer.byteLength(text);
  if (bytes > MAX_DEVCONTAINER_BYTES)
    throw new DevcontainerError(`${path} is ${bytes} bytes, at most ${MAX_DEVCONTAINER_BYTES}`);
  const errors: ParseError[] = [];
  const doc: Json = parse(text, errors, { allowTrailingComma: true, disallowComments: false });
  const first = errors[0];
  if (first !== undefined)
    throw new DevcontainerError(
      `${path} is not JSON with comments: ${printParseErrorCode(first.error)} at ${lineAndColumn(text, first.offset)}`,
    );
  if (!isRecord(doc)) throw new DevcontainerError(`${path} does not hold an object`);

  const notHonoured = Object.keys(doc).filter((key) => !TAKEN.has(key) && !DESCRIPTIVE.has(key));
  const image = doc.image;
  if (typeof image !== "string" || image.trim() === "") {
    const instead = ["build", "dockerFile", "dockerComposeFile"].filter((key) => key in doc);
    throw new DevcontainerError(
      `${path} names no image${instead.length > 0 ? ` (${instead.join(", ")}: ${REASONS[instead[0] ?? "build"]})` : ""}: give it an "image"`,
    );
  }
  const env = {
    ...stringRecord("containerEnv", doc.containerEnv),
    ...stringRecord("remoteEnv", doc.remoteEnv),
  };
  const substituted = Object.entries(env)
    .filter(([, value]) => value.includes("${"))
    .map(([key]) => key);
  const user = doc.remoteUser ?? doc.containerUser;
  if (user !== undefined && typeof user !== "string")
    throw new DevcontainerError(
      `${doc.remoteUser !== undefined ? "remoteUser" : "containerUser"}: a user name`,
    );
  const setup = DEVCONTAINER_SETUP_COMMANDS.flatMap((name) =>
    doc[name] === undefined ? [] : commandSteps(name, doc[name]),
  );

  const parts = notHonoured.map((key) => (REASONS[key] ? `${key} (${REASONS[key]})` : key));
  if (user === "root" || user === "0")
    parts.push(`user ${user} (sessions run as their own uids, never root)`);
  if (substituted.length > 0)
    parts.push(`the \${...} variables of ${substituted.join(", ")} (kept as written)`);
  const environment = {
    path,
    image: image.trim(),
    env,
    ...(user !== undefined ? { user } : {}),
    setup,
    not_honoured: notHonoured,
    ...(parts.length > 0 ? { warning: `${path}: not honoured: ${parts.join("; ")}` } : {}),
  };
  const checked = DevcontainerEnvironmentSchema.safeParse(environment);
  if (!checked.success) {
    const issue = checked.error.issues[0];
    throw new DevcontainerError(`${path}: ${issue?.path.join(".") ?? ""}: ${issue?.message ?? "invalid"}`);
  }
  return checked.data;
}
