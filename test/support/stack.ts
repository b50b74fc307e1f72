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
    const stack = await LocalStack.start({ ...options, extraTokens: ["other"] });
    return Object.assign(stack, { otherToken: stack.extraTokens.other ?? "" });
  },
};
export type TestStack = LocalStack & { otherToken: string };
