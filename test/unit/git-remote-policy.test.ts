/**
 * Which remotes the host's git may reach (host-agent/src/git/remote-policy.ts), and the closed
 * environment every host-side git run gets (git-env.ts).
 */
import { describe, expect, it } from "vitest";
import { closedGitEnv } from "../../host-agent/src/git/git-env.js";
import { checkRemote, isPublicAddress } from "../../host-agent/src/git/remote-policy.js";

const PUBLIC = async () => ["140.82.112.3"];
const strict = { allowLocal: false, lookup: PUBLIC };

describe("remote policy", () => {
  it.each([
    ["https://github.com/acme/app.git", "https"],
    ["ssh://git@github.com/acme/app.git", "ssh"],
    ["https://[2606:50c0:8000::153]/acme/app.git", "https"],
  ])("allows %s", async (url, protocol) => {
    expect((await checkRemote(url, strict)).protocol).toBe(protocol);
  });

  it.each([
    ["http://github.com/acme/app.git", "only https:// and ssh://"],
    ["file:///srv/other-project/workspace", "only https:// and ssh://"],
    ["https://127.0.0.1/repo.git", "non-public"],
    ["https://localhost/repo.git", "non-public"],
    ["https://10.1.2.3/repo.git", "non-public"],
    ["https://192.168.0.10/repo.git", "non-public"],
    ["https://169.254.169.254/latest", "non-public"],
    ["https://[::1]/repo.git", "non-public"],
    ["https://[::ffff:127.0.0.1]/repo.git", "non-public"],
    ["ssh://git@100.64.0.1/repo.git", "non-public"],
    ["https://user:secret@github.com/acme/app.git", "user or password"],
    ["git://github.com/acme/app.git", "only https:// and ssh://"],
  ])("refuses %s", async (url, why) => {
    await expect(checkRemote(url, strict)).rejects.toThrow(why);
  });

  it("resolves a hostname and refuses it when any of its addresses is not public", async () => {
    const rebinding = { allowLocal: false, lookup: async () => ["140.82.112.3", "127.0.0.1"] };
    await expect(checkRemote("https://git.example.com/a.git", rebinding)).rejects.toThrow("127.0.0.1");
    const unresolvable = {
      allowLocal: false,
      lookup: async () => {
        throw new Error("ENOTFOUND");
      },
    };
    await expect(checkRemote("https://nowhere.example/a.git", unresolvable)).rejects.toThrow(
      "cannot be resolved",
    );
  });

  it("allows http://, file:// and local addresses when the host allows local remotes", async () => {
    const local = { allowLocal: true, lookup: PUBLIC };
    expect(await checkRemote("http://127.0.0.1:9/repo.git", local)).toEqual({
      protocol: "http",
      origin: "http://127.0.0.1:9",
    });
    expect(await checkRemote("file:///srv/repo.git", local)).toEqual({ protocol: "file", origin: null });
  });

  it("knows public from special addresses", () => {
    expect(isPublicAddress("8.8.8.8")).toBe(true);
    for (const a of [
      "127.0.0.1",
      "0.0.0.0",
      "10.0.0.1",
      "172.16.0.1",
      "fe80::1",
      "fc00::1",
      "::",
      "not-an-ip",
    ])
      expect(isPublicAddress(a), a).toBe(false);
  });
});

describe("the closed git environment", () => {
  const env = closedGitEnv(
    {
      protocols: ["https"],
      config: [["http.https://forge.example/.extraHeader", "Authorization: Basic c2VjcmV0"]],
    },
    {
      PATH: "/usr/bin",
      HOME: "/root",
      GIT_DIR: "/evil",
      GIT_CONFIG_PARAMETERS: "'core.fsmonitor'='touch /x'",
    },
  );
  const config = Object.fromEntries(
    Array.from({ length: Number(env.GIT_CONFIG_COUNT) }, (_, i) => [
      env[`GIT_CONFIG_KEY_${i}`],
      env[`GIT_CONFIG_VALUE_${i}`],
    ]),
  );

  it("reads no system or global config, asks nobody and allows only the run's protocols", () => {
    expect(env).toMatchObject({
      GIT_CONFIG_NOSYSTEM: "1",
      GIT_CONFIG_GLOBAL: "/dev/null",
      GIT_TERMINAL_PROMPT: "0",
      GIT_ALLOW_PROTOCOL: "https",
      PATH: "/usr/bin",
      HOME: "/root",
    });
    expect(config).toMatchObject({
      "core.hooksPath": "/dev/null",
      "core.fsmonitor": "false",
      "credential.helper": "",
      "http.followRedirects": "false",
      "protocol.allow": "never",
      "protocol.https.allow": "always",
    });
  });

  it("passes nothing else of the host's environment (a GIT_DIR or injected config there is dropped)", () => {
    expect(env).not.toHaveProperty("GIT_DIR");
    expect(env).not.toHaveProperty("GIT_CONFIG_PARAMETERS");
  });

  it("gives the run's own config (a credential) through the environment, not the command line", () => {
    expect(config["http.https://forge.example/.extraHeader"]).toBe("Authorization: Basic c2VjcmV0");
  });
});
