// @throttlekit/core as WebAssembly for Vercel's edge runtime (the `edge-light` export condition):
// its bundler compiles a `.wasm?module` import at build time, as Workers require.
import module from './pkg/throttlekit_bg.wasm?module'

import { attach } from './fast.mjs'
import { initSync } from './pkg/throttlekit.js'

attach(initSync({ module }))

export * from './api.mjs'
