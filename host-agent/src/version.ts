/**
 * The host-agent's version, as it reports it to the Worker (`host_hello`) and prints it
 * (`--version`): the repository's package.json version, put in by `npm run build`; from source,
 * read from package.json.
 */
import { readFileSync } from "node:fs";

declare const __OUBLIETTE_VERSION__: string | undefined;

function sourceVersion(): string {
  const pkg = JSON.parse(readFileSync(new URL("../../package.json", import.meta.url), "utf8")) as {
    version: string;
  };
  return pkg.version;
}

export const HOST_AGENT_VERSION: string =
  typeof __OUBLIETTE_VERSION__ === "string" ? __OUBLIETTE_VERSION__ : sourceVersion();
