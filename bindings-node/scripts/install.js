#!/usr/bin/env node
// `npm install` hook: a checkout that already has the addon (built by scripts/build.js) uses
// it; otherwise build it from source here (needs cargo), in release mode since this is what a
// consumer runs.
'use strict'
const fs = require('node:fs')
const path = require('node:path')
const { spawnSync } = require('node:child_process')
const { bindingFile } = require('../lib/platform.js')

const pkgDir = path.resolve(__dirname, '..')
if (fs.existsSync(path.join(pkgDir, bindingFile()))) process.exit(0)
const r = spawnSync(process.execPath, [path.join(__dirname, 'build.js'), '--release'], { cwd: pkgDir, stdio: 'inherit' })
process.exit(r.status ?? 1)
