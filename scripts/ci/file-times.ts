/**
 * Each test file's whole time as test/support/file-times-reporter.ts writes it (import, setup,
 * tests and hooks), read by scripts/ci/slowest-files.ts.
 */
import { z } from "zod";

export const FileTimesFileSchema = z.object({
  files: z.array(
    z.object({
      /** Relative to the repository. */
      file: z.string(),
      project: z.string(),
      seconds: z.number().nonnegative(),
      state: z.string(),
    }),
  ),
});
export type FileTimesFile = z.infer<typeof FileTimesFileSchema>;
