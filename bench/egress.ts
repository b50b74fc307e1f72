/**
 * What the egress gate costs, measured in a real container on the local stack (Docker): the
 * fixture registry's 50 MiB package downloaded by curl in the container through the runner's
 * proxy and the host-agent's gate (CONNECT, TLS end to end), against the same download made by
 * curl straight from the host; the time a CONNECT through the gate adds to setting up a
 * connection (p50 of sequential tunnels to a loopback echo service, against direct connects
 * from the host); and what 50 concurrent proxied downloads add to the host-agent's peak memory
 * (VmHWM). The gate's test flag maps the names to loopback: nothing leaves this machine. Bounded
 * in count and time.
 */
import { execFile } from "node:child_process";
import { readFile } from "node:fs/promises";
import { connect, createServer } from "node:net";
import { promisify } from "node:util";
import { ensureDroidImage } from "../host-agent/src/images/images.js";
import { buildAll } from "../scripts/build.js";
import { ensureDockerEngine } from "../scripts/docker/engine.js";
import { LocalStack } from "../scripts/stack/local-stack.js";
import {
  BIG_PACKAGE_NAME,
  BIG_PACKAGE_VERSION,
  startNpmRegistry,
  tarballPath,
} from "../test/fixtures/npm-registry/index.js";
import { TestCaller } from "../test/support/caller.js";
import { loopbackTls } from "../test/support/tls-cert.js";

const SIZE_MIB = 50;
const DOWNLOAD_ROUNDS = 3;
const CONNECTS = 200;
const CONCURRENT = 50;
const REGISTRY = "registry.oubliette.test";
const ECHO = "echo.oubliette.test";
const run = promisify(execFile);
const say = (line: string) => process.stdout.write(`${line}\n`);

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)] ?? Number.NaN;
}

async function peakMiB(pid: number | undefined): Promise<number | null> {
  if (pid === undefined) return null;
  const status = await readFile(`/proc/${pid}/status`, "utf8").catch(() => "");
  const kb = /VmHWM:\s+(\d+) kB/.exec(status)?.[1];
  return kb === undefined ? null : Number(kb) / 1024;
}

/** The p50 of `count` sequential connection setups (connect, then one echoed byte), in ms, direct from the host. */
async function directConnects(port: number, count: number): Promise<number> {
  const samples: number[] = [];
  for (let i = 0; i < count; i++) {
    const started = performance.now();
    await new Promise<void>((resolve, reject) => {
      const socket = connect(port, "127.0.0.1", () => socket.write("x"));
      socket.once("data", () => {
        socket.destroy();
        resolve();
      });
      socket.once("error", reject);
    });
    samples.push(performance.now() - started);
  }
  return median(samples);
}

/** The same, through the container's proxy (a CONNECT, then one echoed byte), run by node in the container. */
const PROXIED_CONNECTS = (port: number, count: number) => `
const http = require("node:http");
const proxy = new URL(process.env.HTTPS_PROXY);
const auth = "Basic " + Buffer.from(decodeURIComponent(proxy.username) + ":" + decodeURIComponent(proxy.password)).toString("base64");
const one = () => new Promise((resolve, reject) => {
  const started = performance.now();
  const req = http.request({ host: proxy.hostname, port: proxy.port, method: "CONNECT", path: "${ECHO}:${port}", agent: false, headers: { "proxy-authorization": auth } });
  req.once("connect", (res, socket) => {
    if (res.statusCode !== 200) return reject(new Error("CONNECT answered " + res.statusCode));
    socket.once("data", () => { socket.destroy(); resolve(performance.now() - started); });
    socket.write("x");
  });
  req.once("error", reject);
  req.end();
});
(async () => {
  const samples = [];
  for (let i = 0; i < ${count}; i++) samples.push(await one());
  samples.sort((a, b) => a - b);
  console.log(JSON.stringify({ p50: samples[Math.floor(samples.length / 2)] }));
})().catch((e) => { console.log(JSON.stringify({ error: e.message })); });`;

export async function benchEgress(): Promise<void> {
  const engine = await ensureDockerEngine({ install: false }).catch(() => null);
  say("");
  if (!engine) {
    say("egress gate: skipped (no Docker Engine: the gate is measured from a real container)");
    return;
  }
  const image = await ensureDroidImage(engine.docker, await buildAll(), () => {});
  const tls = await loopbackTls({ dnsNames: [REGISTRY] });
  const registry = await startNpmRegistry({
    tls: { key: tls.key, cert: tls.cert },
    big: { sizeMiB: SIZE_MIB },
  });
  const echo = createServer((socket) => socket.pipe(socket));
  await new Promise<void>((resolve) => echo.listen(0, "127.0.0.1", resolve));
  const echoPort = (echo.address() as { port: number }).port;
  const stack = await LocalStack.start();
  let caller: TestCaller | undefined;
  try {
    const host = await stack.addHost({
      runtime: "docker",
      image,
      extraEnv: { OUBLIETTE_EGRESS_TEST_RESOLVE: `${REGISTRY}=127.0.0.1,${ECHO}=127.0.0.1` },
    });
    caller = await TestCaller.connect(stack.mcpUrl, stack.adminToken, "bench-egress");
    const { project_id } = await caller.ok<{ project_id: string }>("project", {
      action: "create",
      name: `bench-egress-${crypto.randomUUID().slice(0, 8)}`,
      network: { mode: "allowlist", allow: [`${REGISTRY}:${registry.port}`, `${ECHO}:${echoPort}`] },
      limits: { memory_mb: 2048, pids: 512 },
    });
    const { session_id } = await caller.ok<{ session_id: string }>("session", {
      action: "spawn",
      project_id,
    });
    await caller.waitForOutput(session_id, (d) => d.op === "ready", 60_000);
    // The CA travels as the droid's own file: the container trusts it through curl's --cacert.
    const caPem = await readFile(tls.caFile, "utf8");
    let step = 0;
    const exec = async (argv: string[], timeoutMs = 300_000): Promise<{ stdout: string; exit: number }> => {
      step += 1;
      const id = `egress-${step}`;
      await caller?.runScript(
        session_id,
        { id, steps: [{ op: "exec", id, argv, timeout_ms: timeoutMs }] },
        timeoutMs + 10_000,
      );
      const out = caller?.droidOutputs(session_id).find((d) => d.op === "exec" && d.id === id);
      return { stdout: String(out?.stdout ?? ""), exit: Number(out?.exit_code ?? -1) };
    };
    const writeCa = await exec(
      [
        "node",
        "-e",
        `require("fs").writeFileSync(require("os").homedir()+"/ca.pem", ${JSON.stringify(caPem)})`,
      ],
      10_000,
    );
    if (writeCa.exit !== 0) throw new Error("could not give the container the test CA");
    const url = (name: string) =>
      `https://${name}:${registry.port}${tarballPath(BIG_PACKAGE_NAME, BIG_PACKAGE_VERSION)}`;
    const curlTimes = "%{time_total} %{size_download}";

    // 1. One 50 MiB download, straight from the host and through the gate, DOWNLOAD_ROUNDS each.
    const direct: number[] = [];
    const proxied: number[] = [];
    for (let round = 0; round < DOWNLOAD_ROUNDS; round++) {
      // The same name and certificate, resolved to loopback by curl itself, no proxy.
      const { stdout } = await run("curl", [
        "-sS",
        "--noproxy",
        "*",
        "--resolve",
        `${REGISTRY}:${registry.port}:127.0.0.1`,
        "--cacert",
        tls.caFile,
        "-o",
        "/dev/null",
        "-w",
        curlTimes,
        url(REGISTRY),
      ]);
      direct.push(Number(stdout.split(" ")[0]));
      const inside = await exec([
        "sh",
        "-c",
        `curl -sS --cacert "$HOME/ca.pem" -o /dev/null -w '${curlTimes}' '${url(REGISTRY)}'`,
      ]);
      const [seconds, bytes] = inside.stdout.trim().split(" ").map(Number);
      if (inside.exit !== 0 || (bytes ?? 0) < SIZE_MIB * 1024 * 1024)
        throw new Error(`the proxied download failed: ${inside.stdout}`);
      proxied.push(seconds ?? Number.NaN);
    }
    const mibps = (s: number) => SIZE_MIB / s;
    const directRate = mibps(median(direct));
    const proxiedRate = mibps(median(proxied));

    // 2. Connection setup: CONNECT through the gate against a direct connect.
    const directSetup = await directConnects(echoPort, CONNECTS);
    const tunnels = JSON.parse(
      (await exec(["node", "-e", PROXIED_CONNECTS(echoPort, CONNECTS)], 120_000)).stdout || "{}",
    ) as {
      p50?: number;
      error?: string;
    };
    if (tunnels.p50 === undefined) throw new Error(`the CONNECT timing failed: ${tunnels.error}`);

    // 3. The host-agent's peak memory around CONCURRENT proxied downloads at once.
    const pid = host.process.pid;
    const before = await peakMiB(pid);
    const many = await exec(
      [
        "sh",
        "-c",
        `for i in $(seq ${CONCURRENT}); do curl -sS --cacert "$HOME/ca.pem" -o /dev/null '${url(REGISTRY)}' & done; wait; echo done`,
      ],
      600_000,
    );
    if (!many.stdout.includes("done")) throw new Error("the concurrent downloads did not finish");
    const after = await peakMiB(pid);

    say(
      `egress gate: the ${SIZE_MIB} MiB package over TLS (median of ${DOWNLOAD_ROUNDS}); CONNECT setup (p50 of ${CONNECTS})`,
    );
    say(
      `  download straight from the host:        ${directRate.toFixed(0)} MiB/s (${median(direct).toFixed(3)} s)`,
    );
    say(
      `  download in the container, through the gate: ${proxiedRate.toFixed(0)} MiB/s (${median(proxied).toFixed(3)} s) = ${((proxiedRate / directRate) * 100).toFixed(0)} % of straight (target ≥ 80 %)`,
    );
    say(
      `  connection setup straight: ${directSetup.toFixed(2)} ms; through the gate: ${tunnels.p50.toFixed(2)} ms; adds ${(tunnels.p50 - directSetup).toFixed(2)} ms (target ≤ 2 ms)`,
    );
    say(
      `  host-agent peak memory (VmHWM): ${before?.toFixed(1) ?? "?"} MiB before ${CONCURRENT} concurrent ${SIZE_MIB} MiB downloads, ${after?.toFixed(1) ?? "?"} MiB after: +${before !== null && after !== null ? (after - before).toFixed(1) : "?"} MiB (target ≤ 20 MiB)`,
    );
  } finally {
    await caller?.close();
    await stack.stop();
    echo.close();
    await registry.close();
    await tls.remove();
  }
}

if (import.meta.url === `file://${process.argv[1]}`) await benchEgress();
