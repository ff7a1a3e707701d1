// @throttlekit/core as WebAssembly for Cloudflare Workers (the `workerd` export condition).
// Workers may not compile WebAssembly from bytes after start-up: the module is imported, which
// the bundler (wrangler) or workerd's module list turns into a compiled WebAssembly.Module.
import module from './pkg/throttlekit_bg.wasm'

import { attach } from './fast.mjs'
import { initSync } from './pkg/throttlekit.js'

attach(initSync({ module }))

export * from './api.mjs'
