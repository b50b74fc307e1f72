/**
 * The fixture npm registry (test/fixtures/npm-registry) is a real registry: the machine's own npm
 * installs from it over HTTP and HTTPS (a dependency resolved within its range, two tarballs,
 * integrity checked), installs a scoped package, and, through a proxy that maps
 * `registry.oubliette.test` to loopback, installs by that name with tarball URLs on that name (the
 * way the egress gate's tests will reach it). The big package's tarball comes whole, with the size
 * and integrity its packument states. Only loopback is contacted; npm reads no user config.
 */
import { execFile } from "node:child_process";
import { createHash } from "node:crypto";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, type ExpectStatic, expect, it } from "vitest";
import { z } from "zod";
import {
  BIG_PACKAGE_NAME,
  FIXTURE,
  type NameProxy,
  type NpmRegistry,
  type RegistryRequest,
  startNameProxy,
  startNpmRegistry,
  tarballPath,
} from "../fixtures/npm-registry/index.js";
import { type LoopbackTls, loopbackTls } from "../support/tls-cert.js";

const NAME = "registry.oubliette.test";
const BIG_MiB = 4;

let scratch: string;
let tls: LoopbackTls;
let proxy: NameProxy;
const started: NpmRegistry[] = [];

beforeAll(async () => {
  scratch = mkdtempSync(join(tmpdir(), "oub-npm-registry-"));
  writeFileSync(join(scratch, "user-npmrc"), "");
  writeFileSync(join(scratch, "global-npmrc"), "");
  [tls, proxy] = await Promise.all([loopbackTls({ dnsNames: [NAME] }), startNameProxy([NAME])]);
});

afterAll(async () => {
  await Promise.all([...started.map((r) => r.close()), proxy?.close()]);
  await tls?.remove();
  if (scratch !== undefined) rmSync(scratch, { recursive: true, force: true });
});

/** A registry of its own for one test (installs run side by side, each counting its own requests). */
async function registry(options: { https?: boolean; bigMiB?: number } = {}): Promise<NpmRegistry> {
  const fresh = await startNpmRegistry({
    ...(options.https === true ? { tls: { key: tls.key, cert: tls.cert } } : {}),
    ...(options.bigMiB !== undefined ? { big: { sizeMiB: options.bigMiB } } : {}),
  });
  started.push(fresh);
  return fresh;
}

/** The environment npm runs in: none of the caller's npm or proxy settings, no user or global npmrc. */
function npmEnv(cache: string, extra: Record<string, string>): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [key, value] of Object.entries(process.env)) {
    if (/^(npm_|https?_proxy$|no_proxy$|all_proxy$)/i.test(key)) continue;
    env[key] = value;
  }
  return {
    ...env,
    npm_config_cache: cache,
    npm_config_userconfig: join(scratch, "user-npmrc"),
    npm_config_globalconfig: join(scratch, "global-npmrc"),
    npm_config_update_notifier: "false",
    npm_config_audit: "false",
    npm_config_fund: "false",
    ...extra,
  };
}

function run(cmd: string, args: string[], cwd: string, env: NodeJS.ProcessEnv): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile(cmd, args, { cwd, env, encoding: "utf8", timeout: 30_000 }, (error, stdout, stderr) =>
      error ? reject(new Error(`${cmd} ${args.join(" ")}: ${error.message}\n${stderr}`)) : resolve(stdout),
    );
  });
}

/** `npm install <specs>` from `registry` in a fresh project directory (and cache); that directory. */
async function npmInstall(
  label: string,
  registry: string,
  specs: string[],
  extra: Record<string, string> = {},
): Promise<string> {
  const dir = join(scratch, label);
  const cache = join(scratch, `${label}-cache`);
  mkdirSync(dir);
  writeFileSync(join(dir, "package.json"), `${JSON.stringify({ name: label, private: true })}\n`);
  await run(
    "npm",
    ["install", "--no-audit", "--no-fund", "--registry", registry, ...specs],
    dir,
    npmEnv(cache, extra),
  );
  return dir;
}

const InstalledSchema = z.object({ name: z.string(), version: z.string() });
const LockSchema = z.object({
  packages: z.record(
    z.string(),
    z.object({ resolved: z.string().optional(), integrity: z.string().optional() }),
  ),
});

function installed(dir: string, name: string): z.infer<typeof InstalledSchema> {
  return InstalledSchema.parse(
    JSON.parse(readFileSync(join(dir, "node_modules", name, "package.json"), "utf8")),
  );
}

function lockEntry(dir: string, name: string): { resolved?: string; integrity?: string } | undefined {
  return LockSchema.parse(JSON.parse(readFileSync(join(dir, "package-lock.json"), "utf8"))).packages[
    `node_modules/${name}`
  ];
}

/** The requests a registry saw, as `METHOD path` lines. */
function seen(registry: NpmRegistry): string[] {
  return registry.requests.map((r) => `${r.method} ${r.path}`);
}

/**
 * Installs greeter from `registry`, reached at `origin`, and checks what ended up on disk, in the
 * lock file and in the registry's log; the requests it saw.
 */
async function installGreeter(
  expect: ExpectStatic,
  label: string,
  registry: NpmRegistry,
  origin: string,
  extra: Record<string, string> = {},
): Promise<readonly RegistryRequest[]> {
  const dir = await npmInstall(label, `${origin}/`, [FIXTURE.greeter], extra);
  expect(installed(dir, FIXTURE.greeter).version).toBe("2.1.0");
  // ^1.0.0 resolved within its range, though 2.0.0 is the latest.
  expect(installed(dir, FIXTURE.hello).version).toBe("1.0.0");
  const greeting = await run(
    process.execPath,
    ["-e", `process.stdout.write(require(${JSON.stringify(FIXTURE.greeter)}).greet("gate"))`],
    dir,
    process.env,
  );
  expect(greeting).toBe("hello, gate!");
  for (const [name, version] of [
    [FIXTURE.greeter, "2.1.0"],
    [FIXTURE.hello, "1.0.0"],
  ] as const) {
    expect(lockEntry(dir, name)).toEqual({
      resolved: `${origin}${tarballPath(name, version)}`,
      integrity: (await registry.dist(name, version)).integrity,
    });
  }
  expect(seen(registry).sort()).toEqual(
    [
      `GET /${FIXTURE.greeter}`,
      `GET /${FIXTURE.hello}`,
      `GET ${tarballPath(FIXTURE.greeter, "2.1.0")}`,
      `GET ${tarballPath(FIXTURE.hello, "1.0.0")}`,
    ].sort(),
  );
  return registry.requests;
}

// Each npm run is mostly its own start-up; side by side they take the time of about two.
describe.concurrent("the fixture npm registry, used by the real npm", () => {
  it("installs a package and its dependency over HTTP", async ({ expect }) => {
    const plain = await registry();
    for (const r of await installGreeter(expect, "http", plain, plain.url)) {
      expect(r).toMatchObject({ host: `127.0.0.1:${plain.port}`, proxied: false, status: 200 });
    }
  });

  it("installs over HTTPS, trusting the test CA", async ({ expect }) => {
    const secure = await registry({ https: true });
    const extra = { npm_config_cafile: tls.caFile };
    for (const r of await installGreeter(expect, "https", secure, secure.url, extra)) {
      expect(r).toMatchObject({ host: `127.0.0.1:${secure.port}`, proxied: false, status: 200 });
    }
  });

  it("installs a scoped package, asked for as /@scope%2fname", async ({ expect }) => {
    const plain = await registry();
    const dir = await npmInstall("scoped", `${plain.url}/`, [FIXTURE.scoped]);
    expect(installed(dir, FIXTURE.scoped)).toEqual({ name: FIXTURE.scoped, version: "1.0.0" });
    expect(seen(plain)).toEqual([
      "GET /@oubliette-test%2ftiny",
      "GET /@oubliette-test/tiny/-/tiny-1.0.0.tgz",
    ]);
  });

  it("is reached by name through a proxy over HTTP: absolute-form requests, tarball URLs on the name", async ({
    expect,
  }) => {
    const plain = await registry();
    const origin = `http://${NAME}:${plain.port}`;
    const extra = { npm_config_proxy: proxy.url };
    for (const r of await installGreeter(expect, "by-name-http", plain, origin, extra)) {
      expect(r).toMatchObject({
        host: `${NAME}:${plain.port}`,
        absoluteForm: true,
        proxied: true,
        status: 200,
      });
      expect(r.target.startsWith(`${origin}/`)).toBe(true);
    }
  });

  it("is reached by name through a proxy's CONNECT tunnel over HTTPS, the name in the certificate", async ({
    expect,
  }) => {
    const secure = await registry({ https: true });
    const origin = `https://${NAME}:${secure.port}`;
    const extra = { npm_config_https_proxy: proxy.url, npm_config_cafile: tls.caFile };
    for (const r of await installGreeter(expect, "by-name-https", secure, origin, extra)) {
      // Inside the tunnel the requests are ordinary ones: the proxy leaves no mark on them.
      expect(r).toMatchObject({ host: `${NAME}:${secure.port}`, absoluteForm: false, status: 200 });
    }
    const tunnels = proxy.seen.filter((s) => s.target === `${NAME}:${secure.port}`);
    expect(tunnels.length).toBeGreaterThan(0);
    expect(tunnels.every((s) => s.method === "CONNECT" && s.allowed)).toBe(true);
  });
});

describe("the fixture npm registry, over plain fetch", () => {
  it("serves the big package's tarball whole, with the size and integrity its packument states", async () => {
    const plain = await registry({ bigMiB: BIG_MiB });
    const packument = z
      .object({
        versions: z.record(
          z.string(),
          z.object({ dist: z.object({ tarball: z.string(), integrity: z.string(), shasum: z.string() }) }),
        ),
      })
      .parse(await (await fetch(`${plain.url}/${BIG_PACKAGE_NAME}`)).json());
    const dist = packument.versions["1.0.0"]?.dist;
    expect(dist?.tarball).toBe(`${plain.url}${tarballPath(BIG_PACKAGE_NAME, "1.0.0")}`);
    const expected = await plain.dist(BIG_PACKAGE_NAME, "1.0.0");
    expect(expected.size).toBeGreaterThan(BIG_MiB * 1024 * 1024);
    expect(expected.size).toBeLessThan(BIG_MiB * 1024 * 1024 + 64 * 1024);

    const tarball = dist?.tarball ?? "";
    const head = await fetch(tarball, { method: "HEAD" });
    expect(head.headers.get("content-length")).toBe(String(expected.size));
    const body = Buffer.from(await (await fetch(tarball)).arrayBuffer());
    expect(body.length).toBe(expected.size);
    expect(`sha512-${createHash("sha512").update(body).digest("base64")}`).toBe(dist?.integrity);
    expect(createHash("sha1").update(body).digest("hex")).toBe(dist?.shasum);
    expect(expected.integrity).toBe(dist?.integrity);
  });

  it("answers 404 JSON for what it does not serve", async () => {
    const plain = await registry();
    for (const path of [
      "/no-such-package",
      `/${FIXTURE.hello}/-/${FIXTURE.hello}-9.9.9.tgz`,
      `/${FIXTURE.hello}/1.0.0`,
      "/-/v1/search?text=x",
    ]) {
      const res = await fetch(`${plain.url}${path}`);
      expect([path, res.status]).toEqual([path, 404]);
      expect(await res.json()).toEqual({ error: "not found" });
    }
    const put = await fetch(`${plain.url}/${FIXTURE.hello}`, { method: "PUT", body: "{}" });
    expect(put.status).toBe(404);
    expect(plain.requests.map((r) => r.status)).toEqual([404, 404, 404, 404, 404]);
  });
});
