'use strict';
// Builds the native addon with cargo (release, the workspace's shared target dir, so llama.cpp
// is built once for every binding) and copies it to ingle.node, with llama.cpp's runtime.
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
// llama.cpp's shared libraries and its CPU modules (one per CPU generation; the best one this
// machine runs is loaded at start) go next to the addon, which finds them through its
// RPATH $ORIGIN (see build.rs).
const release = path.dirname(built);
const runtime = fs.readdirSync(release).filter((name) => /^lib(llama|ggml|ggml-base)\.so\.\d+$|^libggml-(cpu-.*|vulkan|cuda)\.so$/.test(name));
if (process.platform === 'linux' && runtime.length === 0) {
  throw new Error(`ingle: llama.cpp's runtime (libllama.so.0, libggml-cpu-*.so) is missing from ${release}`);
}
for (const name of fs.readdirSync(__dirname).filter((n) => /^lib(llama|ggml).*\.so/.test(n))) {
  fs.rmSync(path.join(__dirname, name), { force: true });
}
for (const name of runtime) {
  fs.copyFileSync(path.join(release, name), path.join(__dirname, name));
}
console.log(`ingle: built ${addon}`);
