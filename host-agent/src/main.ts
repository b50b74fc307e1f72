#!/usr/bin/env node
/**
 * host-agent: runs Oubliette droids on this machine and connects them to the Worker. One program
 * (the built dist/host-agent.mjs needs only Node and a Docker Engine) with subcommands:
 * `start` (the daemon, and the default), `images`, `doctor` and `service`; `--help` on each.
 */
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Command } from "commander";
import { CliError } from "./cli/errors.js";
import { doctorCommand, serviceCommand } from "./cli/host-commands.js";
import { imagesCommand } from "./cli/images-command.js";
import { start } from "./cli/start.js";
import { addStartOptions, parseStartConfig } from "./cli/start-options.js";
import { unpackBundlesCommand } from "./cli/unpack-bundles-command.js";
import { HOST_AGENT_VERSION } from "./version.js";

/** Where the daemon keeps its data unless told (config.ts says the same). */
const defaultDataDir = () => join(tmpdir(), "oubliette-data");

const program = new Command()
  .name("host-agent")
  .description("Runs Oubliette droids on this machine and connects them to the Worker.")
  .version(HOST_AGENT_VERSION)
  .showHelpAfterError();

addStartOptions(
  program
    .command("start", { isDefault: true })
    .description("run the host-agent: dial out to the Worker and run its sessions here (the default)"),
).action(async (flags: Record<string, unknown>) => {
  const parsed = parseStartConfig(flags);
  if (!parsed.ok) {
    for (const message of parsed.messages) process.stderr.write(`host-agent: ${message}\n`);
    process.stderr.write("host-agent: see host-agent start --help\n");
    process.exit(2);
  }
  await start(parsed.config);
});

imagesCommand(program, defaultDataDir);
doctorCommand(program);
serviceCommand(program);
unpackBundlesCommand(program);

try {
  await program.parseAsync();
} catch (error) {
  // A refusal this program explains (a bad option, no Docker) is one line, not a stack trace.
  const message =
    error instanceof CliError
      ? error.message
      : error instanceof Error
        ? (error.stack ?? error.message)
        : String(error);
  process.stderr.write(`host-agent: ${message}\n`);
  process.exit(error instanceof CliError ? 2 : 1);
}
