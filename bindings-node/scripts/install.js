#!/usr/bin/env node
// `npm install` hook. The addon comes, in this order, from:
// 1. a file already next to index.js (a checkout built by scripts/build.js), or the prebuilt
//    platform package (the published package's optionalDependencies): nothing to do;
// 2. a source checkout with cargo: build it here, in release mode since a consumer runs this;
// 3. otherwise the install fails with what to do (lib/platform.js, missingAddonMessage).
'use strict'
const path = require('node:path')
const { spawnSync } = require('node:child_process')
const { findBinding, canBuildFromSource, missingAddonMessage } = require('../lib/platform.js')

const pkgDir = path.resolve(__dirname, '..')
if (findBinding() !== null) process.exit(0)
if (canBuildFromSource()) {
  const cargo = spawnSync('cargo', ['--version'], { stdio: 'ignore' })
  if (cargo.status === 0) {
    const r = spawnSync(process.execPath, [path.join(__dirname, 'build.js'), '--release'], { cwd: pkgDir, stdio: 'inherit' })
    process.exit(r.status ?? 1)
  }
}
console.error(missingAddonMessage())
process.exit(1)
