// The WebAssembly build's public API, the native package's in-process classes (docs/edge.md);
// each entry (node.mjs, workerd.mjs, edge-light.mjs, browser.mjs) instantiates the module first.
export { Limiter, ManualClock, MemoryStore, MultiLimiter, RedisRestStore, Shaper, Strategy, errorCodes, version } from './pkg/throttlekit.js'
// The stores whose state lives in a Durable Object or a Deno KV database (docs/edge.md).
export { DenoKvStore, DurableObjectStore } from './pkg/throttlekit.js'
