// @throttlekit/core/fastify as an ES module: the same plugin as fastify.js.
import { createRequire } from 'node:module'

export const { rateLimitPlugin } = createRequire(import.meta.url)('./fastify.js')
export default rateLimitPlugin
