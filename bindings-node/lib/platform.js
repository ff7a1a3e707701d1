'use strict'
// The addon's file name for this platform, napi-rs's convention:
// throttlekit.<platform>-<arch>[-<abi>].node (e.g. throttlekit.linux-x64-gnu.node).

function abi() {
  if (process.platform !== 'linux') return process.platform === 'win32' ? '-msvc' : ''
  // glibc reports its version in the process report; musl does not.
  const report = typeof process.report?.getReport === 'function' ? process.report.getReport() : null
  const glibc = report?.header?.glibcVersionRuntime
  return glibc ? '-gnu' : '-musl'
}

function bindingFile() {
  return `throttlekit.${process.platform}-${process.arch}${abi()}.node`
}

module.exports = { bindingFile }
