export { ContainerConnection } from "./container-connection.js";
export { RelaySocketServer, type RelaySocketServerOptions } from "./relay-socket-server.js";
export type { CallerToolRequest, ContainerHandlers } from "./types.js";
