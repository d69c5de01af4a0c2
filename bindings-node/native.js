'use strict';
// The native addon, built from src/ by build.js (cargo) into ingle.node.
const path = require('path');

try {
  module.exports = require(path.join(__dirname, 'ingle.node'));
} catch (err) {
  err.message = `ingle: cannot load the native addon ingle.node (${err.message}); ` +
    'build it with `npm run build` (needs Rust: https://rustup.rs)';
  throw err;
}
