/**
 * The Worker's tokens. worker/src/auth/tokens.ts reads each from its plain secret or from its
 * SHA-256 (`…_SHA256`, which wins when both are set):
 * - the admin token: without it (and without OUBLIETTE_STATIC_TOKENS) every authenticated request
 *   fails with `no tokens configured`, and it is what issues every other token;
 * - the host token: what host-agents present (README "Deploy", the hosts' step).
 * OUBLIETTE_REQUEST_STATE_KEY is not checked: unset, the token directory makes a random key on
 * first use and keeps it (worker/src/mcp/modern/request-state.ts), which is what a deploy wants.
 */
import { type Finding, found, missing } from "./finding.js";
import type { ListFailureCause, SecretListing } from "./secret-listing.js";

/** The one-liner README shows for a new token: `oub_` and 64 hex digits, the Worker's TOKEN_SHAPE. */
export const NEW_TOKEN_COMMAND = `node -e "console.log('oub_'+require('crypto').randomBytes(32).toString('hex'))"`;

const SHA256 = /^[0-9a-f]{64}$/;

interface TokenSetting {
  /** OUBLIETTE_ADMIN_TOKEN or OUBLIETTE_HOST_TOKEN; its hash is `${name}_SHA256`. */
  name: string;
  label: string;
  /** Why it is needed and what to do with the token once made. */
  use: string;
}

const TOKENS: readonly TokenSetting[] = [
  {
    name: "OUBLIETTE_ADMIN_TOKEN",
    label: "admin token",
    use: "keep it: you sign in with it and issue every other token with it",
  },
  {
    name: "OUBLIETTE_HOST_TOKEN",
    label: "host token",
    use: "give the same token to each host-agent as OUBLIETTE_HOST_TOKEN",
  },
];

export interface SecretsInput {
  secrets: SecretListing;
  /** The deploy's [vars] with `--var` overrides applied: a token's hash is not secret and may be there. */
  vars: Record<string, unknown>;
  /** `--env NAME`, repeated in the commands the fixes show. */
  envName: string | undefined;
}

export function checkSecrets(input: SecretsInput): Finding[] {
  const { secrets } = input;
  if (secrets.kind === "not_checked") return [];
  if (secrets.kind === "unavailable") return [listingFailure(secrets.cause, secrets.detail)];
  const names = new Set(secrets.names);
  const envFlag = input.envName === undefined ? "" : ` --env ${input.envName}`;
  return TOKENS.map((token) => checkToken(token, names, input.vars, envFlag));
}

function checkToken(
  token: TokenSetting,
  secretNames: ReadonlySet<string>,
  vars: Record<string, unknown>,
  envFlag: string,
): Finding {
  const hashName = `${token.name}_SHA256`;
  const hashVar = vars[hashName];
  // A hash in [vars] is read as the Worker reads it (trimmed, lowercased); a bad one fails every request.
  if (hashVar !== undefined && hashVar !== "") {
    if (typeof hashVar === "string" && SHA256.test(hashVar.trim().toLowerCase()))
      return found(`${token.label}: ${hashName} is set ([vars])`);
    return missing(
      `${token.label}: ${hashName} in [vars] is not a SHA-256 (64 hex digits)`,
      `put the token's SHA-256 there (node -e "console.log(require('crypto').createHash('sha256').update(process.argv[1]).digest('hex'))" oub_…), or remove it and set ${token.name} as a secret`,
    );
  }
  if (secretNames.has(hashName)) return found(`${token.label}: secret ${hashName} is set`);
  if (secretNames.has(token.name)) return found(`${token.label}: secret ${token.name} is set`);
  // The Worker reads a plain value just the same; it is accepted, and named for what it is.
  const plainVar = vars[token.name];
  if (typeof plainVar === "string" && plainVar !== "")
    return found(
      `${token.label}: ${token.name} is set as a plain variable (a secret would keep it out of wrangler.toml and the dashboard)`,
    );
  return missing(
    `${token.label}: neither ${token.name} nor ${hashName} is set`,
    `make a token (${NEW_TOKEN_COMMAND} prints oub_ and 64 hex digits), run npx wrangler secret put ${token.name}${envFlag} and paste it; ${token.use}`,
  );
}

function listingFailure(cause: ListFailureCause, detail: string): Finding {
  switch (cause) {
    case "not_logged_in":
      return missing(
        "the Worker's secrets could not be listed: wrangler is not logged in to Cloudflare",
        "npx wrangler login (or set CLOUDFLARE_API_TOKEN, e.g. in CI), then run this again",
      );
    case "offline":
      return missing(
        "the Worker's secrets could not be listed: wrangler could not reach Cloudflare",
        "check the network connection, then run this again (npx wrangler login if wrangler then asks you to sign in)",
      );
    case "failed":
      return missing(
        `the Worker's secrets could not be listed: ${detail}`,
        "run npx wrangler secret list to see why (npx wrangler login if you are not signed in), or deploy without the checks: npm run deploy -- --skip-checks",
      );
  }
}
