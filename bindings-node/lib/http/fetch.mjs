// @throttlekit/core/fetch as an ES module: the same functions as fetch.js.
import { createRequire } from 'node:module'

export const { withRateLimit, defaultPeer } = createRequire(import.meta.url)('./fetch.js')
export default withRateLimit
