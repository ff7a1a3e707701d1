'use strict'
// Where the native addon of this platform comes from, napi-rs's convention:
// - a file throttlekit.<platform>-<arch>[-<abi>].node next to index.js (a source checkout, built
//   by scripts/build.js), else
// - the prebuilt package @throttlekit/core-<platform>-<arch>[-<abi>], which the published
//   @throttlekit/core names in its optionalDependencies (npm installs only the one whose
//   os/cpu/libc match).
const fs = require('node:fs')
const path = require('node:path')

const pkgDir = path.resolve(__dirname, '..')

function abi() {
  if (process.platform !== 'linux') return process.platform === 'win32' ? '-msvc' : ''
  // glibc reports its version in the process report; musl does not.
  const report = typeof process.report?.getReport === 'function' ? process.report.getReport() : null
  const glibc = report?.header?.glibcVersionRuntime
  return glibc ? '-gnu' : '-musl'
}

function platformId() {
  return `${process.platform}-${process.arch}${abi()}`
}

function bindingFile() {
  return `throttlekit.${platformId()}.node`
}

function platformPackage() {
  return `@throttlekit/core-${platformId()}`
}

/** The addon's path, or null when neither the local file nor the platform package is there. */
function findBinding() {
  const local = path.join(pkgDir, bindingFile())
  if (fs.existsSync(local)) return local
  try {
    return require.resolve(platformPackage())
  } catch {
    return null
  }
}

/** True in a source checkout (the Rust crate is there to build). */
function canBuildFromSource() {
  return fs.existsSync(path.join(pkgDir, 'Cargo.toml')) && fs.existsSync(path.join(pkgDir, 'src'))
}

/** What a user on a platform without a prebuilt addon has to do. */
function missingAddonMessage() {
  return (
    `@throttlekit/core: no native addon for ${platformId()}: ` +
    `found neither ${bindingFile()} nor the prebuilt package ${platformPackage()}. ` +
    'Prebuilt addons exist for linux-x64-gnu (glibc >= 2.17) only; if you are on it, ' +
    'reinstall without --omit=optional / --no-optional. Anywhere else, build from source: ' +
    'install Rust (https://rustup.rs) and a C linker, clone the throttlekit repository and run ' +
    '`npm install ./bindings-node` from its root.'
  )
}

module.exports = { bindingFile, platformPackage, findBinding, canBuildFromSource, missingAddonMessage }
