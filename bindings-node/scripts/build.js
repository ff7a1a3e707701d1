#!/usr/bin/env node
// Builds the addon with plain `cargo build` and copies it to the file name index.js loads.
//
// Why not `napi build`: the napi CLI always passes `--target <triple>`, which builds into
// target/<triple>/ and shares no compiled dependency with the workspace's `cargo build` and
// `cargo test` (tokio and the rest built a second time: +30-55 s cold). We build like the rest of the workspace and ask
// napi-derive for its type definitions (NAPI_TYPE_DEF_TMP_FOLDER), which the CLI's own
// `generateTypeDef` turns into index.d.ts exactly as `napi build` would.
//
//   node scripts/build.js [--release] [--write-dts]
//
// The generated .d.ts goes to <target>/throttlekit-node/index.d.ts; `--write-dts` also copies it
// over the committed index.d.ts. `.build.json` records where it is, for the drift test.
'use strict'
const { spawnSync } = require('node:child_process')
const fs = require('node:fs')
const path = require('node:path')

const pkgDir = path.resolve(__dirname, '..')
const root = path.resolve(pkgDir, '..')
const release = process.argv.includes('--release')
const writeDts = process.argv.includes('--write-dts')
const targetDir = path.resolve(process.env.CARGO_TARGET_DIR || path.join(root, 'target'))
const profileDir = path.join(targetDir, release ? 'release' : 'debug')
const typeDefDir = path.join(targetDir, 'throttlekit-node', release ? 'typedef-release' : 'typedef-debug')
const crate = 'throttlekit-node'

fs.mkdirSync(typeDefDir, { recursive: true })
const env = { ...process.env, NAPI_TYPE_DEF_TMP_FOLDER: typeDefDir }
// napi-derive writes type definitions only while it expands the crate; if they are missing
// but the crate is up to date, force that one crate to recompile (napi-build watches this).
if (!fs.existsSync(path.join(typeDefDir, crate))) {
  env.NAPI_FORCE_BUILD_THROTTLEKIT_NODE = String(Date.now())
}
const args = ['build', '-p', crate, '--message-format=short']
if (release) args.push('--release')
const r = spawnSync('cargo', args, { cwd: root, env, stdio: 'inherit' })
if (r.status !== 0) process.exit(r.status ?? 1)

const lib = path.join(profileDir, process.platform === 'darwin' ? 'libthrottlekit_node.dylib' : process.platform === 'win32' ? 'throttlekit_node.dll' : 'libthrottlekit_node.so')
const { bindingFile } = require('../lib/platform.js')
const dest = path.join(pkgDir, bindingFile())
// Copy to a temporary name and rename, so a running process never sees a half-written file.
fs.copyFileSync(lib, dest + '.tmp')
fs.renameSync(dest + '.tmp', dest)
console.log(`built ${path.relative(process.cwd(), dest)} (${release ? 'release' : 'debug'})`)

async function dts() {
  const { generateTypeDef } = await import('@napi-rs/cli')
  const { dts } = await generateTypeDef({ typeDefDir, cwd: pkgDir, constEnum: false })
  const out = path.join(targetDir, 'throttlekit-node', 'index.d.ts')
  fs.writeFileSync(out, dts)
  fs.writeFileSync(path.join(pkgDir, '.build.json'), JSON.stringify({ generatedDts: out, release }, null, 2) + '\n')
  if (writeDts) {
    fs.copyFileSync(out, path.join(pkgDir, 'index.d.ts'))
    console.log('wrote index.d.ts')
  }
}

// The CLI is a devDependency: a consumer's `npm install` builds the addon without it.
let haveCli = true
try { require.resolve('@napi-rs/cli') } catch { haveCli = false }
if (haveCli) dts().catch((e) => { console.error(e); process.exit(1) })
