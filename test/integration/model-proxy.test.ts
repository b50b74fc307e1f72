/**
 * The host-agent's model proxy over a real Unix socket, forwarding to a real HTTP upstream on
 * loopback: the allowlist, the key swap (the placeholder never goes upstream, the host's key
 * never comes back), streaming, usage metering and the budget. And the runner's forwarder in
 * front of it, the way an agent in a container reaches it.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { createServer, type IncomingHttpHeaders, request, type Server } from "node:http";
import { connect } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { ModelForwarder } from "../../container-client/src/runner/model-forwarder.js";
import { loadModelKeys } from "../../host-agent/src/models/model-keys.js";
import { ModelProxy } from "../../host-agent/src/models/model-proxy.js";
import { SessionMeter } from "../../host-agent/src/models/session-meter.js";
import { createLogger } from "../../lib/log.js";
import type { UsageTotals } from "../../protocol/usage.js";

const logger = createLogger({ name: "model-proxy-test", level: process.env.TEST_LOG_LEVEL ?? "silent" });
const HOST_KEY = "sk-host-secret-key-that-must-stay-on-the-host";
const PLACEHOLDER = "oubm_placeholder_for_the_session_0001";

interface Seen {
  method: string;
  url: string;
  headers: IncomingHttpHeaders;
  body: string;
}

/** An upstream that records what reached it and answers as the test says. */
let upstream: Server;
let upstreamUrl = "";
const seen: Seen[] = [];
let answer: (req: Seen) => { status?: number; type: string; body: string; chunks?: string[] } = () => ({
  type: "application/json",
  body: "{}",
});

let dir = "";
let proxy: ModelProxy;
let closeSocket: () => Promise<void>;
let socketPath = "";
let reports: { totals: UsageTotals; refused?: string | undefined }[] = [];

beforeAll(async () => {
  upstream = createServer((req, res) => {
    let body = "";
    req.on("data", (c: Buffer) => {
      body += c.toString();
    });
    req.on("end", () => {
      const entry = { method: req.method ?? "", url: req.url ?? "", headers: req.headers, body };
      seen.push(entry);
      const a = answer(entry);
      res.writeHead(a.status ?? 200, { "content-type": a.type });
      if (!a.chunks) return void res.end(a.body);
      // Streamed in pieces, with pauses, the way a model streams.
      const chunks = [...a.chunks];
      const next = () => {
        const chunk = chunks.shift();
        if (chunk === undefined) return void res.end();
        res.write(chunk);
        setTimeout(next, 5);
      };
      next();
    });
  });
  await new Promise<void>((resolve) => upstream.listen(0, "127.0.0.1", resolve));
  const address = upstream.address();
  upstreamUrl = `http://127.0.0.1:${typeof address === "object" && address ? address.port : 0}`;
  dir = mkdtempSync(join(tmpdir(), "oub-model-proxy-"));
  socketPath = join(dir, "model.sock");
  proxy = new ModelProxy({
    keys: loadModelKeys({
      OUBLIETTE_ANTHROPIC_API_KEY: HOST_KEY,
      OUBLIETTE_ANTHROPIC_BASE_URL: upstreamUrl,
      OUBLIETTE_OPENAI_API_KEY: HOST_KEY,
      OUBLIETTE_OPENAI_BASE_URL: upstreamUrl,
      OUBLIETTE_GEMINI_API_KEY: HOST_KEY,
      OUBLIETTE_GEMINI_BASE_URL: upstreamUrl,
    }),
    logger,
  });
  closeSocket = await proxy.listen(socketPath);
});

afterAll(async () => {
  await closeSocket();
  await new Promise<void>((resolve) => upstream.close(() => resolve()));
  rmSync(dir, { recursive: true, force: true });
});

afterEach(() => {
  proxy.unregister(PLACEHOLDER);
  seen.length = 0;
  reports = [];
});

function session(budgetUsd?: number): SessionMeter {
  const meter = new SessionMeter({
    sessionId: "ses_test",
    budgetUsd,
    report: (totals, refused) => reports.push({ totals, refused }),
  });
  proxy.register(PLACEHOLDER, meter);
  return meter;
}

/** An HTTP request over the model socket (what the forwarder's bytes amount to). */
function call(
  path: string,
  options: { method?: string; headers?: Record<string, string>; body?: string } = {},
): Promise<{ status: number; headers: IncomingHttpHeaders; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request(
      { socketPath, path, method: options.method ?? "POST", headers: options.headers ?? {} },
      (res) => {
        let body = "";
        res.on("data", (c: Buffer) => {
          body += c.toString();
        });
        res.on("end", () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }));
      },
    );
    req.on("error", reject);
    req.end(options.method === "GET" ? undefined : (options.body ?? "{}"));
  });
}

const anthropicStream = [
  'event: message_start\ndata: {"type":"message_start","message":{"model":"claude-sonnet-4-5","usage":{"input_tokens":1000,"output_tokens":1}}}\n\n',
  'event: content_block_delta\ndata: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hi"}}\n\n',
  'event: message_delta\ndata: {"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":500}}\n\n',
  'event: message_stop\ndata: {"type":"message_stop"}\n\n',
];

describe("model proxy", () => {
  it("forwards an allowed request with the host's key in place of the placeholder, streams the answer and meters it", async () => {
    session();
    answer = () => ({ type: "text/event-stream", body: "", chunks: anthropicStream });
    const res = await call("/v1/messages?beta=true", {
      headers: {
        "x-api-key": PLACEHOLDER,
        "anthropic-version": "2023-06-01",
        "content-type": "application/json",
      },
      body: '{"model":"claude-sonnet-4-5","stream":true}',
    });
    expect(res.status).toBe(200);
    expect(res.body).toBe(anthropicStream.join(""));
    const [reached] = seen;
    expect(reached?.url).toBe("/v1/messages?beta=true");
    expect(reached?.headers["x-api-key"]).toBe(HOST_KEY);
    expect(reached?.headers["anthropic-version"]).toBe("2023-06-01");
    expect(JSON.stringify(reached?.headers)).not.toContain(PLACEHOLDER);
    expect(reached?.body).toBe('{"model":"claude-sonnet-4-5","stream":true}');
    expect(JSON.stringify(res.headers)).not.toContain(HOST_KEY);
    await expect.poll(() => reports.length).toBe(1);
    // claude-sonnet: $3 in, $15 out per million.
    expect(reports[0]?.totals).toEqual({
      requests: 1,
      input_tokens: 1000,
      output_tokens: 500,
      cost_usd: (1000 * 3 + 500 * 15) / 1_000_000,
    });
  });

  it("takes the placeholder from a Bearer header (OpenAI) and meters a streamed chat completion's usage chunk", async () => {
    session();
    answer = () => ({
      type: "text/event-stream",
      body: "",
      chunks: [
        'data: {"model":"gpt-5","choices":[{"delta":{"content":"x"}}]}\n\n',
        'data: {"model":"gpt-5","choices":[],"usage":{"prompt_tokens":200,"completion_tokens":20}}\n\n',
        "data: [DONE]\n\n",
      ],
    });
    const res = await call("/v1/chat/completions", { headers: { authorization: `Bearer ${PLACEHOLDER}` } });
    expect(res.status).toBe(200);
    expect(seen[0]?.headers.authorization).toBe(`Bearer ${HOST_KEY}`);
    await expect.poll(() => reports[0]?.totals.input_tokens).toBe(200);
    expect(reports[0]?.totals.output_tokens).toBe(20);
  });

  it("reads Responses and Gemini usage, and keeps Gemini's ?key= placeholder from going upstream", async () => {
    session();
    answer = (req) =>
      req.url.startsWith("/v1/responses")
        ? {
            type: "application/json",
            body: '{"model":"gpt-5","usage":{"input_tokens":10,"output_tokens":5,"total_tokens":15}}',
          }
        : {
            type: "text/event-stream",
            body: "",
            chunks: ['data: {"usageMetadata":{"promptTokenCount":7,"candidatesTokenCount":3}}\r\n\r\n'],
          };
    await call("/v1/responses", { headers: { authorization: `Bearer ${PLACEHOLDER}` } });
    await call(`/v1beta/models/gemini-2.5-pro:streamGenerateContent?alt=sse&key=${PLACEHOLDER}`);
    expect(seen[1]?.url).toBe("/v1beta/models/gemini-2.5-pro:streamGenerateContent?alt=sse");
    expect(seen[1]?.headers["x-goog-api-key"]).toBe(HOST_KEY);
    await expect.poll(() => reports.length).toBe(2);
    expect(reports[1]?.totals).toMatchObject({ requests: 2, input_tokens: 17, output_tokens: 8 });
  });

  it("refuses, without forwarding, a path outside the providers' APIs", async () => {
    session();
    for (const path of [
      "/v1/files",
      "/admin",
      "/v1/messages/../../etc/passwd",
      "/v1beta/models/x:deleteEverything",
    ]) {
      const res = await call(path, { headers: { "x-api-key": PLACEHOLDER } });
      expect(res.status, path).toBe(403);
      expect(JSON.parse(res.body)).toMatchObject({
        error: { message: expect.stringContaining("does not allow") },
      });
    }
    const get = await call("/v1/messages", { method: "GET", headers: { "x-api-key": PLACEHOLDER } });
    expect(get.status).toBe(403);
    expect(seen).toEqual([]);
  });

  it("refuses a request without a session's placeholder (a real key or none), without forwarding", async () => {
    session();
    const attempts: Record<string, string>[] = [
      {},
      { "x-api-key": HOST_KEY },
      { authorization: "Bearer sk-someone-elses" },
    ];
    for (const headers of attempts) {
      expect((await call("/v1/messages", { headers })).status).toBe(401);
    }
    expect(seen).toEqual([]);
  });

  it("refuses the next request once the session's budget is spent, and reports why", async () => {
    session(0.01);
    answer = () => ({
      type: "application/json",
      // $3/M in + $15/M out: 0.003 + 0.0075 = 0.0105 > 0.01
      body: '{"model":"claude-sonnet-4-5","usage":{"input_tokens":1000,"output_tokens":500}}',
    });
    expect((await call("/v1/messages", { headers: { "x-api-key": PLACEHOLDER } })).status).toBe(200);
    await expect.poll(() => reports.length).toBe(1);
    const refused = await call("/v1/messages", { headers: { "x-api-key": PLACEHOLDER } });
    expect(refused.status).toBe(403);
    expect(JSON.parse(refused.body).error.message).toMatch(/budget is spent.*max_cost_usd \$0\.01/);
    expect(seen).toHaveLength(1);
    expect(reports[1]?.refused).toMatch(/budget is spent/);
  });

  it("answers a request line no URL parser takes with 400, and goes on serving", async () => {
    session();
    const answer = await new Promise<string>((resolve, reject) => {
      const socket = connect(socketPath);
      let text = "";
      socket.on("data", (c: Buffer) => {
        text += c.toString();
      });
      socket.on("end", () => resolve(text));
      socket.on("error", reject);
      socket.end("POST http://[ HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\nConnection: close\r\n\r\n");
    });
    expect(answer).toMatch(/^HTTP\/1\.1 400/);
    expect((await call("/v1/admin", { headers: { "x-api-key": PLACEHOLDER } })).status).toBe(403);
  });

  it("says plainly when the host has no key for the provider", async () => {
    const bare = new ModelProxy({ keys: loadModelKeys({}), logger });
    const path = join(dir, "bare.sock");
    const close = await bare.listen(path);
    bare.register(PLACEHOLDER, new SessionMeter({ sessionId: "ses_x", report: () => {} }));
    const res = await new Promise<{ status: number; body: string }>((resolve, reject) => {
      const req = request(
        { socketPath: path, path: "/v1/messages", method: "POST", headers: { "x-api-key": PLACEHOLDER } },
        (r) => {
          let body = "";
          r.on("data", (c: Buffer) => {
            body += c.toString();
          });
          r.on("end", () => resolve({ status: r.statusCode ?? 0, body }));
        },
      );
      req.on("error", reject);
      req.end("{}");
    });
    await close();
    expect(res.status).toBe(403);
    expect(res.body).toContain("no anthropic key");
  });

  it("reaches the proxy through the runner's forwarder on a loopback port, as an agent does", async () => {
    session();
    answer = () => ({ type: "text/event-stream", body: "", chunks: anthropicStream });
    const forwarder = await ModelForwarder.start(socketPath, logger);
    try {
      const res = await fetch(`${forwarder.baseUrl}/v1/messages`, {
        method: "POST",
        headers: { "x-api-key": PLACEHOLDER },
        body: "{}",
      });
      expect(res.status).toBe(200);
      expect(await res.text()).toBe(anthropicStream.join(""));
      expect(seen[0]?.headers["x-api-key"]).toBe(HOST_KEY);
    } finally {
      await forwarder.close();
    }
  });
});
