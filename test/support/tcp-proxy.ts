import { createConnection, createServer, type Server, type Socket } from "node:net";

/**
 * A loopback TCP proxy a test can cut and restore, to break the host-agent's tunnel for real
 * (both directions drop, new connections are refused while cut).
 */
export class TcpProxy {
  readonly #server: Server;
  readonly #sockets = new Set<Socket>();
  #cut = false;

  private constructor(server: Server) {
    this.#server = server;
  }

  static async start(targetPort: number): Promise<TcpProxy> {
    const server = createServer();
    const proxy = new TcpProxy(server);
    server.on("connection", (client) => proxy.#accept(client, targetPort));
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    return proxy;
  }

  get port(): number {
    const address = this.#server.address();
    if (address === null || typeof address === "string") throw new Error("proxy is not listening");
    return address.port;
  }

  get url(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  /** Drops every connection and refuses new ones until `restore()`. */
  cut(): void {
    this.#cut = true;
    for (const s of this.#sockets) s.destroy();
    this.#sockets.clear();
  }

  restore(): void {
    this.#cut = false;
  }

  async close(): Promise<void> {
    this.cut();
    await new Promise<void>((resolve) => this.#server.close(() => resolve()));
  }

  #accept(client: Socket, targetPort: number): void {
    if (this.#cut) {
      client.destroy();
      return;
    }
    const upstream = createConnection({ host: "127.0.0.1", port: targetPort });
    for (const s of [client, upstream]) {
      this.#sockets.add(s);
      s.on("close", () => this.#sockets.delete(s));
      s.on("error", () => s.destroy());
    }
    client.pipe(upstream);
    upstream.pipe(client);
    client.on("close", () => upstream.destroy());
    upstream.on("close", () => client.destroy());
  }
}
