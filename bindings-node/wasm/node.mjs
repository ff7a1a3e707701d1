// @throttlekit/core as WebAssembly for Node, Deno and Bun (the `deno` and `bun` export conditions,
// and `@throttlekit/core/wasm` to force it on Node): the module's bytes are read from the
// package and compiled once, at import. The API is the native package's memory path
// (docs/edge.md).
import { readFileSync } from 'node:fs'

import { attach } from './fast.mjs'
import { initSync } from './pkg/throttlekit.js'

attach(initSync({ module: readFileSync(new URL('./pkg/throttlekit_bg.wasm', import.meta.url)) }))

export * from './api.mjs'
