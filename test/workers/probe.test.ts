import { runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { it } from "vitest";

const t = <T>(p: Promise<T>) =>
  Promise.race([p, new Promise((res) => setTimeout(() => res("TIMEOUT"), 1500))]);
it("registry rpc", async () => {
  const stub = env.HOSTS.get(env.HOSTS.idFromName("global"));
  console.log("W", await runInDurableObject(stub, (_, s) => s.getWebSockets().length));
  console.log(
    "R",
    JSON.stringify(
      await t(
        runInDurableObject(stub, (o) =>
          o.startSession({ sessionId: "ses_000000000000000000000000", spec: {} }),
        ),
      ),
    ),
  );
  console.log(
    "C",
    JSON.stringify(await t(stub.startSession({ sessionId: "ses_000000000000000000000000", spec: {} }))),
  );
}, 20000);
