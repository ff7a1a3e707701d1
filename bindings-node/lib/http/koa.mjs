// @throttlekit/core/koa as an ES module: the same function as koa.js.
import { createRequire } from 'node:module'

export const { rateLimit } = createRequire(import.meta.url)('./koa.js')
export default rateLimit
