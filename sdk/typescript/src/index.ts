export { connect, parseMemory, ExecFarm, Sandbox, Files } from "./client.js";
export type { ConnectOptions, ExecOptions, ExecResult, Limits, Memory, Output, Result, RunOptions, RuntimeName, SandboxOptions, Truncation } from "./client.js";
export type { Embedded, SpawnOptions } from "./embedded.js";
export * from "./errors.js";
