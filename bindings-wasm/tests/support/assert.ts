// The few assertions deno-kv.test.ts needs, on node:assert (no registry import: the suite runs
// offline).
import nodeAssert from 'node:assert/strict'

export function assert(cond: unknown, message?: string): asserts cond {
  nodeAssert.ok(cond, message)
}

export function assertEquals(actual: unknown, expected: unknown, message?: string) {
  nodeAssert.deepStrictEqual(actual, expected, message)
}

export function assertThrows(f: () => unknown, _type: ErrorConstructor, includes: string) {
  nodeAssert.throws(f, (e: Error) => e.message.includes(includes))
}

export async function assertRejects(f: () => Promise<unknown>, _type: ErrorConstructor, includes: string) {
  await nodeAssert.rejects(f, (e: Error) => e.message.includes(includes))
}
