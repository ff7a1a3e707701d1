#!/usr/bin/env node
// Prints the package.json of a published npm package, derived from bindings-node/package.json
// so that names, version and metadata have one source:
//
//   npm-manifests.js core               @throttlekit/core: no build tooling, no Rust sources,
//                                       optionalDependencies on every prebuilt platform package
//   npm-manifests.js platform <id>      @throttlekit/core-<id> (e.g. linux-x64-gnu): the .node only
'use strict'
const path = require('node:path')
const src = require(path.join(__dirname, '..', '..', 'bindings-node', 'package.json'))

// napi-rs's platform ids, by Rust target triple (the ones package.json `napi.targets` may name).
const PLATFORMS = {
  'x86_64-unknown-linux-gnu': { id: 'linux-x64-gnu', os: 'linux', cpu: 'x64', libc: 'glibc' },
}

function platformOf(triple) {
  const p = PLATFORMS[triple]
  if (!p) throw new Error(`no npm platform id for napi target ${triple}: add it to PLATFORMS`)
  return p
}

const common = { version: src.version, license: src.license, engines: src.engines }
if (src.repository) common.repository = src.repository

function core() {
  const optionalDependencies = {}
  for (const triple of src.napi.targets) optionalDependencies[`${src.name}-${platformOf(triple).id}`] = src.version
  return {
    name: src.name,
    ...common,
    description: src.description,
    main: src.main,
    types: src.types,
    exports: src.exports,
    bin: src.bin,
    files: ['index.js', 'index.mjs', 'index.d.ts', 'bin/', 'lib/', 'wasm/', 'scripts/install.js'],
    scripts: { install: src.scripts.install },
    napi: src.napi,
    optionalDependencies,
  }
}

function platform(id) {
  const p = Object.values(PLATFORMS).find((q) => q.id === id)
  if (!p) throw new Error(`unknown platform id ${id}`)
  const file = `${src.napi.binaryName}.${p.id}.node`
  return {
    name: `${src.name}-${p.id}`,
    ...common,
    description: `The prebuilt native addon of ${src.name} for ${p.id} (glibc >= 2.17).`,
    os: [p.os],
    cpu: [p.cpu],
    ...(p.libc ? { libc: [p.libc] } : {}),
    main: file,
    files: [file],
  }
}

const [kind, arg] = process.argv.slice(2)
const manifest = kind === 'core' ? core() : kind === 'platform' ? platform(arg) : null
if (!manifest) {
  console.error('usage: npm-manifests.js core | platform <id>')
  process.exit(2)
}
process.stdout.write(JSON.stringify(manifest, null, 2) + '\n')
