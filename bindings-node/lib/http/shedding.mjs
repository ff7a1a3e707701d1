// @throttlekit/core/shedding as an ES module: the same functions as shedding.js.
import { createRequire } from 'node:module'

export const { express, fastify, koa, outcome } = createRequire(import.meta.url)('./shedding.js')
