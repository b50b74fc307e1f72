/**
 * OUBLIETTE_PUBLIC_ORIGINS: deployed, the Worker answers only requests whose Host is a loopback
 * name or the host of one of these origins (DNS-rebinding protection, worker/src/http/origin.ts).
 * Left empty, the deployed Worker refuses every request. wrangler.toml sets it to "" and `wrangler
 * deploy` replaces the deployed [vars] with wrangler.toml's, so a value typed into the dashboard
 * does not survive the next deploy: it belongs in wrangler.toml or in `--var`.
 */
import { type Finding, found, missing } from "./finding.js";
import { parsePublicOrigins } from "./public-origins.js";

const NAME = "OUBLIETTE_PUBLIC_ORIGINS";

export interface PublicOriginsInput {
  /** The deploy's [vars] with `--var` overrides applied. */
  vars: Record<string, unknown>;
  /** Whether the value came from a `--var` (for the message). */
  fromFlag: boolean;
  /** The Worker's name, for the example origin. */
  workerName: string;
}

export function checkPublicOrigins(input: PublicOriginsInput): Finding {
  const value = input.vars[NAME];
  const source = input.fromFlag ? "--var" : "wrangler.toml [vars]";
  const example = `https://${input.workerName}.<your-subdomain>.workers.dev`;
  const fix = `set it to the Worker's origin in wrangler.toml [vars], ${NAME} = "${example}" (or its custom domain; comma-separate several; your workers.dev subdomain is on the dashboard's Workers & Pages page), or pass it on every deploy: npm run deploy -- --var ${NAME}:${example}`;
  if (value !== undefined && typeof value !== "string")
    return missing(`${NAME} in ${source} is not a string`, fix);
  const { origins, invalid } = parsePublicOrigins(value ?? "");
  if (invalid.length > 0)
    return missing(
      `${NAME} has ${invalid.map((e) => JSON.stringify(e)).join(", ")}, not an origin like https://host[:port] (the Worker would refuse its configuration)`,
      fix,
    );
  if (origins.length === 0)
    return missing(`${NAME} is empty: the deployed Worker would refuse every request`, fix);
  if (!origins.some((o) => o.startsWith("https:")))
    return missing(
      `${NAME} has no https origin (${origins.join(", ")}): Cloudflare serves the Worker over https`,
      fix,
    );
  return found(`${NAME} is ${origins.join(", ")} (${source})`);
}
