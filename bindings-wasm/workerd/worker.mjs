// A Cloudflare Worker that replays a posted vectors file (conformance-vectors/FORMAT.md) through
// the WebAssembly build, loaded as a Worker loads it (`@throttlekit/core`'s `workerd` entry, the
// module imported, not compiled from bytes), and answers `{passed, failed, failures}`.
// bindings-wasm/workerd/replay.mjs serves it with workerd and posts the files.
import * as tk from './wasm/workerd.mjs'
import conformance from './lib/conformance.js'

export default {
  async fetch(request) {
    if (request.method !== 'POST') return new Response('POST a vectors file\n', { status: 405 })
    try {
      const file = conformance.parse(await request.text(), new URL(request.url).searchParams.get('name') ?? 'posted')
      return Response.json(await conformance.replay(file, { api: tk }))
    } catch (e) {
      return Response.json({ code: e.code ?? 'error', message: e.message }, { status: 400 })
    }
  },
}
