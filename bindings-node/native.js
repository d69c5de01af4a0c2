'use strict';
// The native addon ingle.node: built from src/ by build.js (cargo) in a checkout, prebuilt in the
// packed tarball (scripts/pack-node), with llama.cpp's runtime next to it (RPATH $ORIGIN).
const fs = require('fs');
const path = require('path');

// The prebuilt addon and llama.cpp's libraries need glibc 2.34 (GLIBC_2.34 symbol versions).
const GLIBC_NEEDED = [2, 34];

// Why this machine cannot run the prebuilt addon, or null when it should.
function unsupported() {
  if (process.platform !== 'linux' || process.arch !== 'x64') {
    return `the prebuilt addon is for Linux x86-64, this is ${process.platform} ${process.arch}`;
  }
  let glibc;
  try {
    glibc = process.report.getReport().header.glibcVersionRuntime;
  } catch {
    return null; // cannot tell: let the loader's own message speak
  }
  if (!glibc) return 'the prebuilt addon needs glibc, and this Linux has none (musl?)';
  const [major, minor] = glibc.split('.').map(Number);
  if (major < GLIBC_NEEDED[0] || (major === GLIBC_NEEDED[0] && minor < GLIBC_NEEDED[1])) {
    return `the prebuilt addon needs glibc ${GLIBC_NEEDED.join('.')} or later, this system has ${glibc}`;
  }
  return null;
}

try {
  module.exports = require(path.join(__dirname, 'ingle.node'));
} catch (err) {
  const checkout = fs.existsSync(path.join(__dirname, 'build.js'));
  const why = checkout ? null : unsupported();
  err.message = `ingle: cannot load the native addon ingle.node (${err.message}); ` +
    (checkout
      ? 'build it with `npm run build` (needs Rust: https://rustup.rs)'
      : `${why ? `${why}; ` : ''}build from source instead: npm install <ingle checkout>/bindings-node (needs Rust: https://rustup.rs)`);
  throw err;
}
