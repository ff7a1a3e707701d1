// @throttlekit/core/express as an ES module: the same function as express.js.
import { createRequire } from 'node:module'

export const { rateLimit } = createRequire(import.meta.url)('./express.js')
export default rateLimit
