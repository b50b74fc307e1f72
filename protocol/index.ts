export * from "./caller-tools.js";
export * from "./events.js";
export * from "./json.js";
export * from "./line-splitter.js";
export * from "./rpc-errors.js";
export * from "./socket.js";
export * from "./subscriber.js";
export * from "./tunnel.js";
