#!/usr/bin/env node
'use strict';
// The `ingle` command of the npm package (`npx ingle pull TAG`, `npx ingle serve`): the same
// command as the `ingle` binary, run by the same Rust implementation through the native addon
// (`ingle --help` lists its commands). It runs on this thread: a command line has nothing else
// to do meanwhile, and Ctrl-C stops the process as it stops the binary.
const { runCommand } = require('./native.js');

process.exitCode = runCommand(process.argv.slice(2));
