'use strict';
// Builds the native addon with cargo (release, the workspace's shared target dir, so llama.cpp
// is built once for every binding) and copies it to ingle.node.
const { execFileSync } = require('child_process');
const fs = require('fs');
const path = require('path');

const root = path.resolve(__dirname, '..');
const cargo = process.env.CARGO || 'cargo';
execFileSync(cargo, ['build', '--release', '--locked', '-p', 'ingle-node'], { cwd: root, stdio: 'inherit' });
const metadata = JSON.parse(
  execFileSync(cargo, ['metadata', '--format-version', '1', '--no-deps'], { cwd: root, maxBuffer: 1 << 26 }),
);
const names = { linux: 'libingle_node.so', darwin: 'libingle_node.dylib', win32: 'ingle_node.dll' };
const built = path.join(metadata.target_directory, 'release', names[process.platform] || names.linux);
const addon = path.join(__dirname, 'ingle.node');
fs.rmSync(addon, { force: true }); // a fresh inode: a running process may have the old one mapped
fs.copyFileSync(built, addon);
console.log(`ingle: built ${addon}`);
