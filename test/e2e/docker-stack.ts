import { afterAll, beforeAll } from "vitest";
import { TestCaller } from "../support/caller.js";
import { dockerContext } from "../support/docker-context.js";
import { TestStack } from "../support/stack.js";

/**
 * The Worker under wrangler dev with one Docker host-agent and an admin caller, started before
 * the file's tests and stopped after them. Read `stack` and `caller` inside tests.
 */
export function dockerStack(): { readonly stack: TestStack; readonly caller: TestCaller } {
  let stack: TestStack | undefined;
  let caller: TestCaller | undefined;
  beforeAll(async () => {
    stack = await TestStack.start();
    await stack.addHost({ runtime: "docker", image: dockerContext().droidImage });
    caller = await TestCaller.connect(stack.mcpUrl, stack.adminToken);
  }, 120_000);
  afterAll(async () => {
    await caller?.close();
    await stack?.stop();
  });
  const started = <T>(value: T | undefined): T => {
    if (value === undefined) throw new Error("the Docker stack has not started");
    return value;
  };
  return {
    get stack() {
      return started(stack);
    },
    get caller() {
      return started(caller);
    },
  };
}
