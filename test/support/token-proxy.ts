/**
 * A loopback proxy that adds a Bearer token to requests carrying none and passes everything else
 * through as is (status, headers, streamed bodies): for clients that cannot send one, such as the
 * MCP conformance suite.
 */
import { createServer, request, type Server } from "node:http";
import type { AddressInfo } from "node:net";

export interface TokenProxy {
  /** `target`'s URL with the proxy's origin. */
  url: string;
  close(): Promise<void>;
}

/** Starts the proxy on 127.0.0.1 (a free port) in front of `target`. */
export async function startTokenProxy(target: URL, token: string): Promise<TokenProxy> {
  const server: Server = createServer((req, res) => {
    const headers = { ...req.headers };
    headers.authorization ??= `Bearer ${token}`;
    const upstream = request(
      { host: target.hostname, port: target.port, path: req.url, method: req.method, headers },
      (answer) => {
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(res);
      },
    );
    upstream.on("error", () => {
      if (!res.headersSent) res.writeHead(502);
      res.end();
    });
    res.on("close", () => upstream.destroy());
    req.pipe(upstream);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const port = (server.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}${target.pathname}`,
    async close() {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}
