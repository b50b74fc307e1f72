import { exports } from "cloudflare:workers";
import { expect, it } from "vitest";

it("answers health checks", async () => {
  const res = await exports.default.fetch("https://worker.test/healthz");
  expect(await res.json()).toEqual({ ok: true });
});
