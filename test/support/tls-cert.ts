/**
 * A throwaway certificate authority and a server certificate for 127.0.0.1 (openssl), for tests
 * that need https on loopback: the Worker's local server trusts the CA when started with
 * NODE_EXTRA_CA_CERTS pointing at `caFile` (Miniflare passes it on to workerd). Extra DNS names
 * can be added to the certificate for a client that reaches 127.0.0.1 by a name (through a proxy).
 */
import { execFile } from "node:child_process";
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";

const run = promisify(execFile);

export interface LoopbackTls {
  /** PEM of the CA, to trust. */
  caFile: string;
  key: string;
  cert: string;
  remove(): Promise<void>;
}

export interface LoopbackTlsOptions {
  /** DNS names the certificate is also valid for, besides 127.0.0.1 and localhost. */
  dnsNames?: readonly string[];
}

const DNS_NAME =
  /^(?:\*\.)?[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?)*$/;

/** A fresh CA (in a temporary directory) and a certificate it signed for 127.0.0.1, localhost and `dnsNames`. */
export async function loopbackTls(options: LoopbackTlsOptions = {}): Promise<LoopbackTls> {
  const dnsNames = ["localhost", ...(options.dnsNames ?? [])];
  for (const name of dnsNames) if (!DNS_NAME.test(name)) throw new Error(`not a DNS name: ${name}`);
  const dir = await mkdtemp(join(tmpdir(), "oubliette-tls-"));
  const file = (name: string) => join(dir, name);
  const openssl = (...args: string[]) => run("openssl", args, { cwd: dir });
  await openssl(
    "req",
    "-x509",
    "-newkey",
    "rsa:2048",
    "-nodes",
    "-days",
    "2",
    "-subj",
    "/CN=Oubliette test CA",
    "-keyout",
    file("ca.key"),
    "-out",
    file("ca.pem"),
    "-addext",
    "basicConstraints=critical,CA:TRUE",
    "-addext",
    "keyUsage=critical,keyCertSign,cRLSign",
  );
  await openssl(
    "req",
    "-newkey",
    "rsa:2048",
    "-nodes",
    "-subj",
    "/CN=127.0.0.1",
    "-keyout",
    file("server.key"),
    "-out",
    file("server.csr"),
  );
  await writeFile(
    file("ext.cnf"),
    `subjectAltName=IP:127.0.0.1,${dnsNames.map((n) => `DNS:${n}`).join(",")}\nextendedKeyUsage=serverAuth\n`,
  );
  await openssl(
    "x509",
    "-req",
    "-in",
    file("server.csr"),
    "-CA",
    file("ca.pem"),
    "-CAkey",
    file("ca.key"),
    "-CAcreateserial",
    "-days",
    "2",
    "-out",
    file("server.pem"),
    "-extfile",
    file("ext.cnf"),
  );
  return {
    caFile: file("ca.pem"),
    key: await readFile(file("server.key"), "utf8"),
    cert: await readFile(file("server.pem"), "utf8"),
    remove: () => rm(dir, { recursive: true, force: true }),
  };
}
