/**
 * The egress socket (`runner/egress.sock` in a project's socket directory, root's alone): how the
 * runner hands the host-agent's gate one proxy connection of a process in the container.
 *
 * The runner accepts the connection on its loopback proxy port, finds which uid made it (the
 * kernel's socket table), and opens the egress socket. It sends one line, EgressHello (JSON,
 * '\n'), and then the client's bytes as they come, untouched: the client's HTTP proxy
 * conversation (CONNECT host:port, or a plain-HTTP request in absolute form), which the gate
 * reads, decides and answers itself (a hello it refuses is answered with an HTTP 502 saying why,
 * and the connection ends). Nothing is awaited between the hello and the client's bytes: a round
 * trip less on every connection.
 */
import { z } from "zod";
import { SessionIdSchema } from "./ids.js";

/** Longest hello line the gate reads. */
export const MAX_EGRESS_HELLO_BYTES = 4096;

/** Who made the connection, as the kernel says (by uid): a session's agent, the exec identity, or not known. */
export const EgressPeerSchema = z.discriminatedUnion("kind", [
  z.strictObject({ kind: z.literal("session"), session_id: SessionIdSchema }),
  /** The exec identity: a user's `container exec`, or the project's setup commands. */
  z.strictObject({ kind: z.literal("exec") }),
  /** No session's uid (or a runtime without uids): the proxy credential alone may say who. */
  z.strictObject({ kind: z.literal("unknown"), uid: z.number().int().min(0).max(4_294_967_295).nullable() }),
]);
export type EgressPeer = z.infer<typeof EgressPeerSchema>;

export const EgressHelloSchema = z.strictObject({
  v: z.literal(1),
  /** The container's secret: only the runner holds it. */
  runner_token: z.string().min(1).max(512),
  peer: EgressPeerSchema,
});
export type EgressHello = z.infer<typeof EgressHelloSchema>;

/** The user name in the proxy URL handed to agents and commands (its password is the credential). */
export const PROXY_USER = "oubliette";

/** A proxy credential's shape: `oubp_` and 48 hex digits. */
export const PROXY_TOKEN_PATTERN = /^oubp_[0-9a-f]{48}$/;

/** Where no proxy applies: the container's own loopback (the model forwarder lives there). */
export const NO_PROXY_HOSTS = "127.0.0.1,localhost,::1";

/**
 * The environment that points a program at the container's proxy, in every spelling common
 * tools read: the HTTP(S)_PROXY pair in both cases (curl reads only the lower-case http_proxy),
 * npm's (and pnpm's) config and Yarn's. (Not NODE_USE_ENV_PROXY: Node 22 warns on every start
 * with it, the agents' own MCP servers included.) The credential, when
 * given, rides in the URL as Basic proxy authentication; the uid decides who a request is
 * anyway, the credential only has to agree.
 */
export function proxyEnvironment(port: number, credential: string | null): Record<string, string> {
  const auth = credential === null ? "" : `${PROXY_USER}:${credential}@`;
  const url = `http://${auth}127.0.0.1:${port}`;
  return {
    HTTP_PROXY: url,
    HTTPS_PROXY: url,
    http_proxy: url,
    https_proxy: url,
    NO_PROXY: NO_PROXY_HOSTS,
    no_proxy: NO_PROXY_HOSTS,
    npm_config_proxy: url,
    npm_config_https_proxy: url,
    npm_config_noproxy: NO_PROXY_HOSTS,
    YARN_HTTP_PROXY: url,
    YARN_HTTPS_PROXY: url,
  };
}

/**
 * Where npm keeps its cache and installs global packages for a user whose home is `home`: the
 * image's own prefix is read-only, the home is the user's.
 */
export function npmEnvironment(home: string, path: string): Record<string, string> {
  const prefix = `${home}/.npm-global`;
  return {
    npm_config_cache: `${home}/.npm`,
    npm_config_prefix: prefix,
    COREPACK_HOME: `${home}/.cache/corepack`,
    PATH: `${path}:${prefix}/bin`,
  };
}
