/**
 * Check 6: the model keys and the git credentials, read exactly as the host-agent reads them at
 * start (models/model-keys.ts, git/git-credentials.ts). Only what they hold is named (providers,
 * credential names), never a key or token; and a file other users can read is a failure.
 */
import { stat } from "node:fs/promises";
import { GitCredentials, GitCredentialsError } from "../../git/git-credentials.js";
import { configuredProviders, loadModelKeys, ModelKeysError } from "../../models/model-keys.js";
import { type DoctorFinding, errorText } from "./finding.js";

/** A failure when other users can read (or write) `file`, which holds secrets. */
async function exposed(check: string, file: string): Promise<DoctorFinding | null> {
  const info = await stat(file).catch(() => null);
  if (info === null || (info.mode & 0o006) === 0) return null;
  return {
    check,
    ok: false,
    detail: `${file} can be read by other users (mode 0${(info.mode & 0o777).toString(8)}); it holds secrets`,
    fix: `chmod 600 ${file}`,
  };
}

export async function checkModelKeys(
  file: string | undefined,
  env: NodeJS.ProcessEnv,
): Promise<DoctorFinding> {
  const check = "model-keys";
  let providers: string[];
  try {
    providers = configuredProviders(loadModelKeys(env, file));
  } catch (error) {
    // Its messages name the file's fields, never their values.
    if (!(error instanceof ModelKeysError)) throw error;
    return {
      check,
      ok: false,
      detail: error.message,
      fix: 'check --model-keys (OUBLIETTE_MODEL_KEYS) and the file: {"anthropic": {"api_key": "…", "base_url": "…"}, "openai": {…}, "google": {…}}',
    };
  }
  if (file !== undefined) {
    const open = await exposed(check, file);
    if (open) return open;
  }
  const from = file === undefined ? "the environment" : `${file} and the environment`;
  return {
    check,
    ok: true,
    detail:
      providers.length > 0
        ? `keys for ${providers.join(", ")} (from ${from})`
        : `no provider key (looked in ${from}): only agents that need no model (the scripted droid) can run`,
  };
}

export async function checkGitCredentials(file: string | undefined): Promise<DoctorFinding> {
  const check = "git-credentials";
  if (file === undefined)
    return {
      check,
      ok: true,
      detail: "none configured: a project naming a git_credential is refused on this host",
    };
  const fix =
    'fix the file: {"<name>": {"token": "…"}} or {"<name>": {"ssh_key_file": "/abs/key", "known_hosts_file": "/abs/known_hosts"}}';
  let names: string[];
  try {
    names = GitCredentials.load(file).names();
  } catch (error) {
    if (!(error instanceof GitCredentialsError)) return { check, ok: false, detail: errorText(error), fix };
    if (error.code === "unreadable")
      return {
        check,
        ok: false,
        detail: `cannot read ${file} (${error.errno})`,
        fix: `check --git-credentials and the file's owner and mode`,
      };
    const detail = error.code === "not_json" ? `${file} is not JSON` : error.message;
    return { check, ok: false, detail, fix };
  }
  const open = await exposed(check, file);
  if (open) return open;
  return {
    check,
    ok: true,
    detail: names.length > 0 ? `credentials ${names.join(", ")} (${file})` : `${file} holds no credential`,
  };
}
