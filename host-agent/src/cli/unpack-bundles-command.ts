/**
 * `host-agent unpack-bundles <dir>` (hidden): writes the container-side bundles this built file
 * carries under `dir`. The daemon runs it as a child process (bundles/droid-bundles.ts), so that
 * the memory of decoding them is the child's, gone when it exits.
 */
import type { Command } from "commander";
import { UNPACK_COMMAND, writeBundles } from "../bundles/droid-bundles.js";
import { EMBEDDED_BUNDLES } from "../bundles/embedded-bundles.js";
import { CliError } from "./errors.js";

export function unpackBundlesCommand(program: Command): void {
  program
    .command(UNPACK_COMMAND, { hidden: true })
    .description("write the container-side bundles this file carries under <dir> (the daemon's own use)")
    .argument("<dir>", "the bundles' directory under the data directory")
    .action(async (dir: string) => {
      if (EMBEDDED_BUNDLES === null)
        throw new CliError(
          "invalid_option",
          "this host-agent runs from source: it carries no bundles (see dist/)",
        );
      await writeBundles(EMBEDDED_BUNDLES, dir);
    });
}
