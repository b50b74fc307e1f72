/**
 * Runs a command inside a project's container straight through the Docker Engine, as a user the
 * test names ("uid:gid", "0" for root): what `container exec` cannot show, since it runs as the
 * project's exec user.
 */
import { readFileSync } from "node:fs";
import type Dockerode from "dockerode";

export interface ExecResult {
  code: number | null;
  out: string;
}

/** The running container of `projectId` (found by its label). */
export async function projectContainer(docker: Dockerode, projectId: string): Promise<Dockerode.Container> {
  const [listed] = await docker.listContainers({ filters: { label: [`oubliette.project=${projectId}`] } });
  if (listed === undefined) throw new Error(`no running container for project ${projectId}`);
  return docker.getContainer(listed.Id);
}

/** Runs `cmd` in `container` as `user`; resolves with its exit code and output (stdout and stderr). */
export async function execAs(
  container: Dockerode.Container,
  user: string,
  cmd: string[],
): Promise<ExecResult> {
  const exec = await container.exec({ Cmd: cmd, User: user, AttachStdout: true, AttachStderr: true });
  const stream = await exec.start({ hijack: true, stdin: false });
  const chunks: Buffer[] = [];
  await new Promise<void>((resolve) => {
    const sink = { write: (chunk: Buffer) => chunks.push(chunk) };
    container.modem.demuxStream(stream, sink as never, sink as never);
    stream.once("end", resolve);
    stream.once("error", () => resolve());
  });
  return { code: (await exec.inspect()).ExitCode, out: Buffer.concat(chunks).toString("latin1") };
}

/** A process of a container as the host sees it. */
export interface ContainerProcess {
  /** Its pid on the host. */
  pid: number;
  uid: number;
  gid: number;
  /** Its environment (the test runs as root on the host, which reads any process's). */
  env: string[];
}

/** The container's processes, from the host (gone ones are left out). */
export async function containerProcesses(container: Dockerode.Container): Promise<ContainerProcess[]> {
  const top = await container.top();
  const column = top.Titles.indexOf("PID");
  const found: ContainerProcess[] = [];
  for (const row of top.Processes) {
    const pid = Number(row[column]);
    try {
      const status = readFileSync(`/proc/${pid}/status`, "utf8");
      found.push({
        pid,
        uid: Number(/^Uid:\s+(\d+)/m.exec(status)?.[1]),
        gid: Number(/^Gid:\s+(\d+)/m.exec(status)?.[1]),
        env: readFileSync(`/proc/${pid}/environ`, "latin1").split("\0"),
      });
    } catch {
      // gone meanwhile
    }
  }
  return found;
}

/** The value of `name` in a process's environment. */
export function envValue(process: ContainerProcess, name: string): string | undefined {
  return process.env.find((kv) => kv.startsWith(`${name}=`))?.slice(name.length + 1);
}
