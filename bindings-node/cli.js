#!/usr/bin/env node
'use strict';
// The `ingle` command of the npm package (`npx ingle pull TAG`): models from ingle's catalog,
// for a machine with the package and nothing else.
//   ingle pull [TAG ...] [--all] [--quiet]   download and verify (default: the default chat model)
//   ingle models [--json]                    the catalog: sizes, what is downloaded
// The models directory is $INGLE_MODELS_DIR, else ~/.cache/ingle/models (--models-dir DIR).
const { OpenAI } = require('./index.js');

const DEFAULT_MODEL = '@local/smollm2-135m-instruct';
const USAGE = 'usage: ingle [--models-dir DIR] pull [TAG ...] [--all] [--quiet] | models [--json]';

function human(size) {
  const units = ['B', 'kB', 'MB', 'GB'];
  let unit = 0;
  while (size >= 1000 && unit < units.length - 1) {
    size /= 1000;
    unit += 1;
  }
  return unit === 0 ? `${size} B` : `${size.toFixed(1)} ${units[unit]}`;
}

async function main(argv) {
  const args = [...argv];
  let modelsDir = null;
  const dirAt = args.indexOf('--models-dir');
  if (dirAt >= 0) [, modelsDir] = args.splice(dirAt, 2);
  const flags = new Set(args.filter((a) => a.startsWith('-')));
  const [command, ...tags] = args.filter((a) => !a.startsWith('-'));
  const unknown = [...flags].filter((f) => !['--all', '--quiet', '-q', '--json'].includes(f));
  if (!['pull', 'models'].includes(command) || unknown.length) {
    console.error(USAGE);
    return 2;
  }
  const client = new OpenAI({ modelsDir });
  const catalog = await client.models.catalog();
  if (command === 'models') {
    if (flags.has('--json')) {
      console.log(JSON.stringify(catalog, null, 2));
      return 0;
    }
    const width = Math.max(...catalog.map((e) => e.tag.length));
    console.log(`${'TAG'.padEnd(width)}  ${'KIND'.padEnd(13)}  ${'SIZE'.padStart(9)}  STATUS`);
    for (const e of catalog) {
      const status = e.cached ? 'downloaded' : `not downloaded: ingle pull ${e.tag}`;
      console.log(`${e.tag.padEnd(width)}  ${e.kind.padEnd(13)}  ${human(e.size).padStart(9)}  ${status}`);
    }
    return 0;
  }
  const quiet = flags.has('--quiet') || flags.has('-q');
  const live = !quiet && process.stderr.isTTY;
  const all = flags.has('--all') ? catalog.map((e) => e.tag) : null;
  for (const tag of all || (tags.length ? tags : [DEFAULT_MODEL])) {
    let file = null;
    const onProgress = (e) => {
      if (!live || !e.file) return;
      if (file !== null && e.file !== file) process.stderr.write('\n');
      file = e.file;
      const percent = e.total ? (100 * e.completed) / e.total : 100;
      const verb = e.status === 'waiting' || e.status === 'verifying' ? e.status : 'pulling';
      process.stderr.write(`\r${verb.padEnd(9)} ${e.file.padEnd(40)} ${percent.toFixed(1).padStart(5)}%  ` +
        `${human(e.completed)} / ${human(e.total)}\x1b[K`);
    };
    let result;
    try {
      result = await client.models.pull(tag, { onProgress });
    } finally {
      if (live && file !== null) process.stderr.write('\n');
    }
    if (!quiet) {
      const size = result.files.reduce((sum, f) => sum + f.size, 0);
      console.log(result.files.some((f) => f.fetched)
        ? `pulled ${tag}: ${human(size)} (${human(result.downloaded_bytes)} downloaded), verified, in ${result.models_dir}`
        : `${tag} is up to date: ${human(size)}, verified, in ${result.models_dir}`);
    }
  }
  return 0;
}

main(process.argv.slice(2)).then((code) => { process.exitCode = code; }, (e) => {
  console.error(`ingle: error: ${e.message}`);
  process.exitCode = 1;
});
