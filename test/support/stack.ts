/**
 * The local stack for end-to-end tests: each test file gets its own Worker (its local server), state
 * directory and tokens, plus a second caller token ("other") that owns nothing.
 */
import { LocalStack, type LocalStackOptions } from "../../scripts/stack/local-stack.js";

export type { HostOptions } from "../../scripts/stack/local-stack.js";

export const TestStack = {
  async start(
    options: Pick<LocalStackOptions, "vars" | "wranglerEnv"> = {},
  ): Promise<LocalStack & { otherToken: string }> {
    const stack = await LocalStack.start({
      ...options,
      extraTokens: ["other"],
      // These machines reach no registry: a test that names a missing image must not make the
      // engine look for one (a test of pulling points its host at a registry on loopback).
      hostEnv: { OUBLIETTE_IMAGE_PULL: "never" },
    });
    return Object.assign(stack, { otherToken: stack.extraTokens.other ?? "" });
  },
};
export type TestStack = LocalStack & { otherToken: string };
