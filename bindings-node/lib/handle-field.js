'use strict'
// A native object's handle (src/handles.rs) kept in a private field of its JS object, stamped on
// by the constructor-return trick: private fields are own-only (an object whose prototype holds
// one has none), cannot be read or written outside this module, and load as fast as a property.
// The native side checks every handle anyway; this only spares it napi_unwrap on each call.

/**
 * `of(o)`: the handle of `o`, asking `register(o)` the first time and keeping the answer on `o`.
 * `register` throws, or answers null (then nothing is kept), when `o` is not of its native class.
 * Each call makes a field of its own, so one kind of handle never answers for another.
 */
function handleField(register) {
  class Receiver {
    constructor(o) {
      return o
    }
  }
  class Handle extends Receiver {
    #id
    constructor(o, id) {
      super(o)
      this.#id = id
    }

    static of(o) {
      if (typeof o === 'object' && o !== null && #id in o) return o.#id
      const id = register(o)
      if (id !== null) new Handle(o, id)
      return id
    }
  }
  return Handle.of
}

module.exports = { handleField }
