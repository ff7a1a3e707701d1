// The types of the WebAssembly build (`@throttlekit/core/wasm`): the native package's, and the
// stores only the WebAssembly build has.
export * from '../index.js'
export * from './stores.js'
