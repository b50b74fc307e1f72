/**
 * What the model path costs an agent: the same model requests to the fake model on loopback,
 * direct and through the runner's forwarder and the host-agent's model proxy (key swap, allowlist,
 * usage metering), non-streamed and streamed (time to the whole answer). Loopback only; bounded.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ModelForwarder } from "../container-client/src/runner/model-forwarder.js";
import { loadModelKeys } from "../host-agent/src/models/model-keys.js";
import { ModelProxy } from "../host-agent/src/models/model-proxy.js";
import { SessionMeter } from "../host-agent/src/models/session-meter.js";
import { createLogger } from "../lib/log.js";
import { startFakeModel } from "../test/fixtures/fake-model/index.js";

const WARMUP = 50;
const SAMPLES = 500;
const PLACEHOLDER = "oubm_bench_placeholder_0000000000";
const say = (line: string) => process.stdout.write(`${line}\n`);

const body = (stream: boolean) =>
  JSON.stringify({
    model: "claude-sonnet-4-5",
    max_tokens: 256,
    stream,
    tools: [{ name: "echo", description: "echo", input_schema: { type: "object" } }],
    messages: [{ role: "user", content: "Say something short." }],
  });

async function timeRequests(baseUrl: string, stream: boolean, count: number): Promise<number[]> {
  const samples: number[] = [];
  for (let i = 0; i < count; i++) {
    const started = performance.now();
    const res = await fetch(`${baseUrl}/v1/messages`, {
      method: "POST",
      headers: {
        "x-api-key": PLACEHOLDER,
        "content-type": "application/json",
        "anthropic-version": "2023-06-01",
      },
      body: body(stream),
    });
    await res.text();
    if (res.status !== 200) throw new Error(`model request answered ${res.status}`);
    samples.push(performance.now() - started);
  }
  return samples;
}

function percentile(samples: number[], p: number): number {
  const sorted = [...samples].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? Number.NaN;
}

export async function benchModelProxy(): Promise<void> {
  const logger = createLogger({ name: "bench", level: "silent" });
  const model = await startFakeModel();
  const dir = mkdtempSync(join(tmpdir(), "oub-bench-model-"));
  const proxy = new ModelProxy({
    keys: loadModelKeys({ OUBLIETTE_ANTHROPIC_API_KEY: "sk-bench", OUBLIETTE_ANTHROPIC_BASE_URL: model.url }),
    logger,
  });
  const close = await proxy.listen(join(dir, "model.sock"));
  let requests = 0;
  proxy.register(
    PLACEHOLDER,
    new SessionMeter({ sessionId: "ses_bench", report: (totals) => (requests = totals.requests) }),
  );
  const forwarder = await ModelForwarder.start(join(dir, "model.sock"), logger);
  try {
    say("");
    say(
      `model path: ${SAMPLES} sequential Anthropic requests to the fake model (loopback), after ${WARMUP} warm-up`,
    );
    say("                         p50 ms   p99 ms");
    for (const stream of [false, true]) {
      await timeRequests(model.url, stream, WARMUP);
      await timeRequests(forwarder.baseUrl, stream, WARMUP);
      const direct = await timeRequests(model.url, stream, SAMPLES);
      const proxied = await timeRequests(forwarder.baseUrl, stream, SAMPLES);
      const kind = stream ? "streamed" : "JSON    ";
      say(`  ${kind} direct        ${fmt(percentile(direct, 50))} ${fmt(percentile(direct, 99))}`);
      say(`  ${kind} proxied       ${fmt(percentile(proxied, 50))} ${fmt(percentile(proxied, 99))}`);
      say(`  ${kind} overhead p50  ${fmt(percentile(proxied, 50) - percentile(direct, 50))}`);
    }
    say(`  requests metered: ${requests} (expected ${2 * (SAMPLES + WARMUP)})`);
    if (requests !== 2 * (SAMPLES + WARMUP)) process.exitCode = 1;
  } finally {
    await forwarder.close();
    await close();
    await model.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

function fmt(ms: number): string {
  return ms.toFixed(2).padStart(7);
}

if (import.meta.url === `file://${process.argv[1]}`) await benchModelProxy();
