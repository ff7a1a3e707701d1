// The WebAssembly build's public API, the native package's in-process classes (docs/edge.md);
// each entry (node.mjs, workerd.mjs, edge-light.mjs, browser.mjs) instantiates the module first.
export { Limiter } from './fast.mjs'
export { ManualClock, MemoryStore, MultiLimiter, RedisRestStore, Shaper, Strategy, errorCodes, version } from './pkg/throttlekit.js'
// The HTTP edge (docs/http.md), as the native package exports it: what @throttlekit/core/fetch
// and @throttlekit/core/hono are built on.
export { ClientIdentity, RateLimitFields, problemBody, unavailableBody } from './pkg/throttlekit.js'
// A constant, not core's `problemContentType()`: this module is evaluated before its entry
// instantiates the WebAssembly module. bindings-wasm/tests/http.test.mjs pins it to core's.
export const PROBLEM_CONTENT_TYPE = 'application/problem+json'
// The stores whose state lives in a Durable Object or a Deno KV database (docs/edge.md).
export { DenoKvStore, DurableObjectStore } from './pkg/throttlekit.js'
