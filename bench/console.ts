/**
 * `npm run bench -- console`: the operator console on the local stack (wrangler dev + a
 * host-agent, in Docker when an engine is reachable, else the process runtime), on loopback.
 *
 * 1. First load: the bytes a signed-in browser fetches to show the console (the page, its script,
 *    its style), raw and compressed as Cloudflare serves them (gzip and brotli). Target <= 200 KB.
 * 2. An event on screen: the scripted droid prints EVENTS lines 50 ms apart, each stamped with its
 *    own clock; a real Chromium on the session's page records when each appears in the event
 *    list (a MutationObserver, the same machine's clock). Target p50 <= 200 ms.
 * Every loop is bounded in count, and the whole run in time.
 */
import { brotliCompressSync, gzipSync } from "node:zlib";
import { chromium } from "playwright-core";
import { ensureDroidImage } from "../host-agent/src/images/images.js";
import { type Summary, summarize } from "../lib/stats.js";
import { CHROMIUM_ARGS, ensureChromium } from "../scripts/browser/ensure-chromium.js";
import { buildAll } from "../scripts/build.js";
import { ensureDockerEngine } from "../scripts/docker/engine.js";
import { LocalStack } from "../scripts/stack/local-stack.js";
import { runSteps, spawnDroid } from "../test/e2e/support.js";
import { TestCaller } from "../test/support/caller.js";

const EVENTS = 200;
const GAP_MS = 50;
const RUN_LIMIT_MS = 10 * 60_000;

const say = (line: string) => process.stdout.write(`${line}\n`);
const kb = (bytes: number) => `${(bytes / 1024).toFixed(1)} KB`;

/** Signs in over HTTP as the page's form does; the cookie header a signed-in browser sends. */
async function signIn(origin: string, token: string): Promise<string> {
  const first = await fetch(origin);
  const csrf = /name="csrf" value="([0-9a-f]+)"/.exec(await first.text())?.[1] ?? "";
  const cookies = first.headers.getSetCookie().map((c) => c.split(";")[0]);
  const signedIn = await fetch(`${origin}/oauth/sign-in`, {
    method: "POST",
    redirect: "manual",
    headers: {
      "content-type": "application/x-www-form-urlencoded",
      origin,
      cookie: cookies.join("; "),
    },
    body: new URLSearchParams({ csrf, return_to: "/", token }).toString(),
  });
  if (signedIn.status !== 303) throw new Error(`sign-in answered ${signedIn.status}`);
  return [...cookies, ...signedIn.headers.getSetCookie().map((c) => c.split(";")[0])].join("; ");
}

/** What the first load of a signed-in console costs: each file raw, gzip and brotli. */
async function firstLoad(origin: string, token: string) {
  const cookie = await signIn(origin, token);
  const files = ["/", "/console/app.js", "/console/console.css"];
  let raw = 0;
  let gzip = 0;
  let brotli = 0;
  for (const path of files) {
    const response = await fetch(`${origin}${path}`, { headers: { cookie } });
    if (!response.ok) throw new Error(`${path} answered ${response.status}`);
    const body = Buffer.from(await response.arrayBuffer());
    raw += body.length;
    gzip += gzipSync(body, { level: 9 }).length;
    brotli += brotliCompressSync(body).length;
  }
  return { files: files.length, raw, gzip, brotli };
}

/** Wall-clock times (ms) at which each `echo: tick-N` line appeared on the page, by N. */
const OBSERVE = `(() => {
  const seen = {};
  window.__seen = seen;
  const list = document.querySelector('ol[aria-label="Events"]');
  const look = (node) => {
    const text = node.textContent || "";
    const m = /echo: tick-(\\d+)/.exec(text);
    if (m && !text.includes("message sent") && seen[m[1]] === undefined)
      seen[m[1]] = performance.timeOrigin + performance.now();
  };
  new MutationObserver((records) => {
    for (const r of records) for (const n of r.addedNodes) look(n);
  }).observe(list, { childList: true, subtree: true });
})()`;

async function eventLatency(stack: LocalStack, caller: TestCaller): Promise<Summary> {
  const sessionId = await spawnDroid(caller);
  const browser = await chromium.launch({
    executablePath: await ensureChromium(() => {}),
    headless: true,
    args: [...CHROMIUM_ARGS],
  });
  try {
    const page = await (await browser.newContext()).newPage();
    await page.goto(stack.url);
    await page.getByLabel("API token").fill(stack.adminToken);
    await page.getByRole("button", { name: "Sign in" }).click();
    await page.getByRole("navigation", { name: "Console" }).waitFor();
    await page.goto(`${stack.url}/#/sessions/${sessionId}`);
    await page.getByRole("list", { name: "Events" }).waitFor();
    await page.getByText("Live.").waitFor({ timeout: 30_000 });
    await page.evaluate(OBSERVE);
    const steps = Array.from({ length: EVENTS }, (_, i) => [
      { op: "echo", text: `tick-${i}`, stamp: true },
      { op: "sleep", ms: GAP_MS },
    ]).flat();
    const outputs = await runSteps(caller, sessionId, steps, RUN_LIMIT_MS);
    const emitted = new Map<number, number>();
    for (const o of outputs) {
      const m = /^tick-(\d+)$/.exec(String(o.text ?? ""));
      if (o.op === "echo" && m && typeof o.at_ms === "number") emitted.set(Number(m[1]), o.at_ms);
    }
    await page.waitForFunction(`Object.keys(window.__seen).length >= ${EVENTS}`, undefined, {
      timeout: 30_000,
    });
    const seen = (await page.evaluate("window.__seen")) as Record<string, number>;
    const samples = [...emitted]
      .map(([n, at]) => (seen[String(n)] ?? Number.NaN) - at)
      .filter(Number.isFinite);
    if (samples.length !== EVENTS) throw new Error(`saw ${samples.length} of ${EVENTS} events on the page`);
    return summarize(samples);
  } finally {
    await browser.close();
  }
}

async function main(): Promise<void> {
  const timer = setTimeout(() => {
    process.stderr.write("bench console: over its time limit\n");
    process.exit(1);
  }, RUN_LIMIT_MS);
  const bundles = await buildAll();
  const engine = await ensureDockerEngine({ install: false }).catch(() => null);
  const image = engine ? await ensureDroidImage(engine.docker, bundles, () => {}) : undefined;
  const stack = await LocalStack.start();
  let caller: TestCaller | undefined;
  try {
    await stack.addHost({ runtime: engine ? "docker" : "process", image });
    caller = await TestCaller.connect(stack.mcpUrl, stack.adminToken, "bench-console");
    say(`console (runtime: ${engine ? "docker" : "process"})`);
    const load = await firstLoad(stack.url, stack.adminToken);
    say(
      `  first load: ${load.files} files, ${kb(load.raw)} raw, ${kb(load.gzip)} gzip, ${kb(load.brotli)} brotli   (target <= 200 KB compressed)`,
    );
    const latency = await eventLatency(stack, caller);
    say(
      `  event on screen after the droid printed it: p50 ${latency.p50} ms, p90 ${latency.p90} ms, p99 ${latency.p99} ms, max ${latency.max} ms (${latency.count} events)   (target p50 <= 200 ms)`,
    );
  } finally {
    clearTimeout(timer);
    await caller?.close();
    await stack.stop();
    await engine?.stop();
  }
}

await main();
