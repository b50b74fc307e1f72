export { ContainerConnection } from "./container-connection.js";
export { RelaySocketServer, type RelaySocketServerOptions } from "./relay-socket-server.js";
export { runnerOnlyAuth, SocketSecrets, sessionOnlyAuth } from "./socket-secrets.js";
export type { CallerToolRequest, ContainerHandlers, SocketAuth } from "./types.js";
