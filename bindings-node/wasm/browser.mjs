// @throttlekit/core as WebAssembly for browsers (the `browser` export condition): the module is
// fetched next to this file and compiled while it streams in, before the first export is used.
import { attach } from './fast.mjs'
import init from './pkg/throttlekit.js'

attach(await init({ module_or_path: new URL('./pkg/throttlekit_bg.wasm', import.meta.url) }))

export * from './api.mjs'
