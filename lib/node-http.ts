/**
 * `node:http`, loaded with require(). An ESM import of it (named or default) builds the module's
 * namespace, which reads every export; on Node 22 three of them (`WebSocket`, `CloseEvent`,
 * `MessageEvent`) are lazy getters that load undici, Node's fetch, and with it http2 and the web
 * streams: ~3 MiB more resident in the host-agent for as long as it runs, which uses none of
 * them. require() reads only the exports the code takes.
 */
import { createRequire } from "node:module";

const require = createRequire(import.meta.url);

export const http: typeof import("node:http") = require("node:http");
