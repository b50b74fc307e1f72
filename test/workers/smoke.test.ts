import { SELF } from "cloudflare:test";
import { expect, it } from "vitest";

it("answers health checks", async () => {
  const res = await SELF.fetch("https://worker.test/healthz");
  expect(await res.json()).toEqual({ ok: true });
});
