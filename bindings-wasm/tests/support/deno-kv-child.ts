// One of the processes of deno-kv.test.ts: opens the KV file given, waits until the start
// time given (so the processes check at once), makes `n` checks of one key at once through a
// DenoKvStore, and prints the decisions as JSON.
import * as tk from '../../../bindings-node/wasm/node.mjs'

const [path, n, startAt, spec] = Deno.args
const kv = await Deno.openKv(path)
const store = new tk.DenoKvStore({ kv, maxRetries: 1000 })
const limiter = new tk.Limiter({ strategy: JSON.parse(spec), store, failPolicy: 'raise' })
await new Promise((r) => setTimeout(r, Math.max(0, Number(startAt) - Date.now())))
const decisions = await Promise.all(Array.from({ length: Number(n) }, () => limiter.check('shared')))
console.log(JSON.stringify({ decisions, conflicts: store.conflicts }))
kv.close()
