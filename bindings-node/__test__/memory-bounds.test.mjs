// A default MemoryStore is bounded: keys beyond the bound are evicted (and counted), keys longer
// than maxKeyLength are refused, and a flood of distinct keys keeps resident memory flat at the
// documented bound (measured in a child process, from /proc/self/status).
import assert from 'node:assert/strict'
import { execFile } from 'node:child_process'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { describe, test } from 'node:test'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'

import { Limiter, ManualClock, MemoryStore, Strategy } from '../index.mjs'

const run = promisify(execFile)
const pkg = join(dirname(fileURLToPath(import.meta.url)), '..')
const DEFAULT_MAX_KEYS = 917504
// The documented resident memory of a full default store (105-125 MB: the allocator keeps some
// of the tables the shards outgrew), above the process's own.
const CEILING_KIB = 130 * 1024
// The same store when the C heap's break cannot grow (194 MB measured, docs/hardening.md). V8
// reserves its 512 MB code range at a hint near the C heap (to keep builtin calls short); about
// one Node process in 100 (3 of 290 here) gets it directly above the break, and glibc then serves
// malloc from 1 MB mappings it never coalesces, so the tables the shards outgrew stay apart.
const BLOCKED_CEILING_KIB = 210 * 1024
// A preload that maps one page 2 MiB above the break before Node starts: the layout above, made on
// purpose, so the test measures it every run instead of one run in a hundred.
const BLOCK_BREAK_C = `
#define _GNU_SOURCE
#include <stdint.h>
#include <sys/mman.h>
#include <unistd.h>
__attribute__((constructor)) static void block_break(void) {
  uintptr_t above = ((uintptr_t)sbrk(0) + (2u << 20) + 4095) & ~(uintptr_t)4095;
  mmap((void *)above, 4096, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
}
`

const FLOOD = `
const fs = require('node:fs')
const { Limiter, ManualClock, MemoryStore, Strategy } = require(process.argv[1])
// Resident KiB outside V8's heap (the store lives there; the heap keeps what the loop's strings
// made it grow to, which is Node's, not the store's).
const rss = () => Number(/VmRSS:\\s+(\\d+)/.exec(fs.readFileSync('/proc/self/status', 'utf8'))[1]) - Math.round(process.memoryUsage().heapTotal / 1024)
const [keys, settledAt] = [Number(process.argv[2]), Number(process.argv[3])]
global.gc && global.gc()
const baseline = rss()
const store = new MemoryStore()
const l = new Limiter({ strategy: Strategy.gcra({ limit: 10, periodMs: 60000, burst: 5 }), store, clock: new ManualClock(1e6) })
let settled = 0
for (let i = 0; i < keys; i++) {
  l.checkSync('user:' + i)
  if (i + 1 === settledAt) { global.gc && global.gc(); settled = rss() }
}
global.gc && global.gc()
// Where the resident memory is, by kind of mapping (KiB), for a failure to name what grew: the
// brk heap and large anonymous mappings hold malloc's memory (the store's tables among it); V8's
// pages are 256 KiB anonymous mappings. (It named the blocked break: [heap] 2 MB, 123 MB in
// mappings of 64 MB and more.)
const where = {}
let kind = ''
for (const line of fs.readFileSync('/proc/self/smaps', 'utf8').split('\\n')) {
  const m = /^([0-9a-f]+)-([0-9a-f]+) \\S+ \\S+ \\S+ \\S+\\s*(.*)$/.exec(line)
  if (m) {
    const kib = (parseInt(m[2], 16) - parseInt(m[1], 16)) / 1024
    kind = m[3] ? (m[3].startsWith('/') ? 'files' : m[3]) : kib < 256 ? 'anon <256K' : kib < 1024 ? 'anon 256K-1M' : kib < 65536 ? 'anon 1M-64M' : 'anon >=64M'
  } else if (line.startsWith('Rss:')) where[kind] = (where[kind] || 0) + Number(line.split(/\\s+/)[1])
}
const v8 = require('node:v8').getHeapStatistics()
where.v8 = { physical: v8.total_physical_size >> 10, malloced: v8.malloced_memory >> 10, peakMalloced: v8.peak_malloced_memory >> 10 }
// KiB between the C heap's end and the next mapping: under 1 MiB, the break could not grow
// (malloc's next request is at least 128 KiB), so glibc took its memory from mmap instead.
const maps = fs.readFileSync('/proc/self/maps', 'utf8').split('\\n')
const at = maps.findIndex((l) => l.endsWith('[heap]'))
const room = at < 0 ? -1 : (parseInt(maps[at + 1], 16) - parseInt(maps[at].split('-')[1], 16)) / 1024
console.log(baseline, settled, rss(), store.size, store.evictions, room, JSON.stringify(where))
`

describe('MemoryStore bounds', () => {
  // Floods a default store in a child process; `preload` is a shared object for LD_PRELOAD.
  async function flood(preload) {
    // CI floods 3M keys (more than 3x the bound); scripts/key-flood.sh floods 10M.
    const keys = Number(process.env.TK_FLOOD_TOTAL || 3_000_000)
    // V8 on one thread: its background compiler and GC threads' own malloc arenas are not the
    // store's, and on a loaded machine their work was still resident at the reading (3-4 MB
    // here, more when starved).
    const env = preload ? { ...process.env, LD_PRELOAD: preload } : process.env
    const { stdout } = await run(process.execPath, ['--single-threaded', '--expose-gc', '-e', FLOOD, pkg, String(keys), String(2 * DEFAULT_MAX_KEYS)], {
      timeout: 600_000,
      env,
    })
    const [numbers, where] = stdout.trim().split(' {')
    const [baseline, settled, end, held, evictions, room] = numbers.split(' ').map(Number)
    const blocked = room >= 0 && room < 1024
    console.log(`node flood of ${keys} keys${blocked ? ' (break blocked)' : ''}: baseline ${baseline} settled ${settled} end ${end} KiB (outside V8's heap), ${evictions} evictions, ${room} KiB above the break; resident by mapping (KiB): {${where}`)
    assert.ok(held <= DEFAULT_MAX_KEYS, `${held} keys held`)
    assert.ok(evictions >= keys - DEFAULT_MAX_KEYS, `${evictions} evictions`)
    assert.ok(end <= settled * 1.02, `grew from ${settled} to ${end} KiB`)
    return { resident: end - baseline, blocked, where: `{${where}` }
  }

  test('a flood of distinct keys keeps a default store flat at its bound', async () => {
    const { resident, blocked, where } = await flood()
    const ceiling = blocked ? BLOCKED_CEILING_KIB : CEILING_KIB
    assert.ok(resident <= ceiling, `${resident} KiB resident above the baseline${blocked ? ' (the break was blocked)' : ''}; by mapping: ${where}`)
  })

  test('with the C heap\'s break blocked, the store is still flat and within its documented ceiling', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'tk-block-break-'))
    try {
      writeFileSync(join(dir, 'block.c'), BLOCK_BREAK_C)
      await run('cc', ['-shared', '-fPIC', '-O2', '-o', join(dir, 'block.so'), join(dir, 'block.c')])
      const { resident, blocked, where } = await flood(join(dir, 'block.so'))
      assert.ok(blocked, `the preload did not block the break; by mapping: ${where}`)
      assert.ok(resident <= BLOCKED_CEILING_KIB, `${resident} KiB resident above the baseline; by mapping: ${where}`)
      // Above the unblocked ceiling: this run measured the layout it meant to.
      assert.ok(resident > CEILING_KIB, `${resident} KiB: no dearer than an unblocked break`)
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })

  test('the defaults are core\'s, and Infinity lifts a bound', () => {
    const long = 'k'.repeat(256)
    const l = new Limiter({ strategy: Strategy.gcra({ limit: 1, periodMs: 1000 }) })
    assert.equal(l.checkSync(long).allowed, true)
    assert.throws(() => l.checkSync(long + 'k'), (e) => e.code === 'config_invalid' && /maxKeyLength/.test(e.message))
    const unbounded = new MemoryStore({ maxKeys: Infinity, maxKeyLength: Infinity })
    const u = new Limiter({ strategy: Strategy.gcra({ limit: 1, periodMs: 1000 }), store: unbounded, clock: new ManualClock(0) })
    for (let i = 0; i < 5000; i++) u.checkSync('k' + i)
    assert.equal(unbounded.size, 5000)
    assert.equal(unbounded.evictions, 0)
    assert.equal(u.checkSync('k'.repeat(100_000)).allowed, true)
  })

  test('maxKeyLength counts the prefix and applies to every call', () => {
    const store = new MemoryStore({ maxKeyLength: 8 })
    const l = new Limiter({ strategy: Strategy.fixedWindow({ limit: 5, windowMs: 1000 }), store, prefix: 'p' })
    assert.equal(l.checkSync('123456').allowed, true) // "p:123456" is 8 bytes
    for (const call of [() => l.checkSync('1234567'), () => l.peekSync('1234567'), () => l.resetSync('1234567')]) {
      assert.throws(call, (e) => e.code === 'config_invalid' && /maxKeyLength/.test(e.message))
    }
    for (const bad of [0, -1, 1.5, NaN]) {
      assert.throws(() => new MemoryStore({ maxKeyLength: bad }), (e) => e.code === 'config_invalid')
      assert.throws(() => new MemoryStore({ maxKeys: bad }), (e) => e.code === 'config_invalid')
    }
  })

  test('evictions count live keys the bound pushed out', () => {
    const store = new MemoryStore({ maxKeys: 64 })
    const l = new Limiter({ strategy: Strategy.gcra({ limit: 10, periodMs: 60000 }), store, clock: new ManualClock(0) })
    for (let i = 0; i < 164; i++) l.checkSync('k' + i)
    assert.equal(store.evictions, 100)
    assert.equal(store.size, 64)
  })
})
