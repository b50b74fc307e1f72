/**
 * A container registry on loopback, as much of the distribution API (v2) as `docker pull` uses:
 * `/v2/`, a manifest by tag or digest, and blobs by digest. Each image it serves is one layer of
 * small files, built here; the engine reaches it over plain HTTP (loopback registries are insecure
 * by default). Tests of pulling point a project's image at `127.0.0.1:<port>/<name>:<tag>`.
 */
import { createHash } from "node:crypto";
import { createServer, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { gzipSync } from "node:zlib";
import tar from "tar-stream";

const MANIFEST_TYPE = "application/vnd.docker.distribution.manifest.v2+json";

export class LoopbackRegistry {
  /** Every request path, in order. */
  readonly requests: string[] = [];
  readonly #blobs = new Map<string, Buffer>();
  readonly #manifests = new Map<string, Buffer>();

  private constructor(
    private readonly server: Server,
    /** `127.0.0.1:<port>`, the registry part of an image reference. */
    readonly host: string,
  ) {}

  static async start(): Promise<LoopbackRegistry> {
    let self: LoopbackRegistry | undefined;
    const server = createServer((req, res) => self?.serve(req.method ?? "GET", req.url ?? "/", res));
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    self = new LoopbackRegistry(server, `127.0.0.1:${(server.address() as AddressInfo).port}`);
    return self;
  }

  /** Serves `<name>:<tag>` as an amd64 image of one layer holding `files`; returns its reference. */
  async add(name: string, tag: string, files: Record<string, string>): Promise<string> {
    const layer = await tarOf(files);
    const blob = gzipSync(layer);
    const config = Buffer.from(
      JSON.stringify({
        architecture: "amd64",
        os: "linux",
        config: { Env: ["PATH=/usr/local/bin:/usr/bin:/bin"] },
        rootfs: { type: "layers", diff_ids: [digest(layer)] },
      }),
    );
    this.#blobs.set(digest(blob), blob);
    this.#blobs.set(digest(config), config);
    const manifest = Buffer.from(
      JSON.stringify({
        schemaVersion: 2,
        mediaType: MANIFEST_TYPE,
        config: {
          mediaType: "application/vnd.docker.container.image.v1+json",
          size: config.length,
          digest: digest(config),
        },
        layers: [
          {
            mediaType: "application/vnd.docker.image.rootfs.diff.tar.gzip",
            size: blob.length,
            digest: digest(blob),
          },
        ],
      }),
    );
    this.#manifests.set(`${name}:${tag}`, manifest);
    this.#manifests.set(`${name}:${digest(manifest)}`, manifest);
    return `${this.host}/${name}:${tag}`;
  }

  private serve(method: string, url: string, res: ServerResponse): void {
    this.requests.push(`${method} ${url}`);
    const path = new URL(url, "http://registry").pathname;
    res.setHeader("docker-distribution-api-version", "registry/2.0");
    if (path === "/v2/" || path === "/v2") {
      res.writeHead(200, { "content-type": "application/json" }).end("{}");
      return;
    }
    const manifest = /^\/v2\/(.+)\/manifests\/([^/]+)$/.exec(path);
    if (manifest) {
      const body = this.#manifests.get(`${manifest[1]}:${manifest[2]}`);
      if (body === undefined) {
        notFound(res, "MANIFEST_UNKNOWN");
        return;
      }
      res.writeHead(200, {
        "content-type": MANIFEST_TYPE,
        "content-length": String(body.length),
        "docker-content-digest": digest(body),
      });
      res.end(method === "HEAD" ? undefined : body);
      return;
    }
    const blob = /^\/v2\/.+\/blobs\/(sha256:[0-9a-f]{64})$/.exec(path);
    const bytes = blob ? this.#blobs.get(blob[1] as string) : undefined;
    if (blob && bytes !== undefined) {
      res.writeHead(200, {
        "content-type": "application/octet-stream",
        "content-length": String(bytes.length),
        "docker-content-digest": blob[1] as string,
      });
      res.end(method === "HEAD" ? undefined : bytes);
      return;
    }
    notFound(res, blob ? "BLOB_UNKNOWN" : "NAME_UNKNOWN");
  }

  async close(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}

function notFound(res: ServerResponse, code: string): void {
  res
    .writeHead(404, { "content-type": "application/json" })
    .end(JSON.stringify({ errors: [{ code, message: code }] }));
}

function digest(bytes: Buffer): string {
  return `sha256:${createHash("sha256").update(bytes).digest("hex")}`;
}

async function tarOf(files: Record<string, string>): Promise<Buffer> {
  const pack = tar.pack();
  for (const [name, text] of Object.entries(files))
    pack.entry({ name, mode: 0o644, mtime: new Date(0) }, text);
  pack.finalize();
  const chunks: Buffer[] = [];
  for await (const chunk of pack) chunks.push(Buffer.from(chunk as Uint8Array));
  return Buffer.concat(chunks);
}
