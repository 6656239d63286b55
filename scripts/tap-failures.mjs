#!/usr/bin/env node
// Reads a TAP log (the suite's output) and prints what failed, short enough to be the last thing
// CI shows: the failed test files first, then each failed assertion with the names of the subtests
// around it and the start of its diagnostic block. Exits 0; the caller keeps the suite's status.
// Usage: node scripts/tap-failures.mjs <log>
import { readFileSync } from 'node:fs';

// CI shows about the last 190 lines: the summary stays well inside that.
const MAX_DIAGNOSTIC_LINES = 8;
const MAX_ASSERTIONS = 8;

const logPath = process.argv[2];
if (!logPath) {
  console.error('usage: node scripts/tap-failures.mjs <tap log>');
  process.exit(2);
}
const lines = readFileSync(logPath, 'utf8').split('\n');

/** @param {string} line */
const indentOf = (line) => line.match(/^ */)?.[0].length ?? 0;
/** @param {string} line */
const depthOf = (line) => Math.floor(indentOf(line) / 4);
const failure = /^\s*not ok \d+ - (.*?)(?: # time=.*)?$/;
const subtest = /^\s*# Subtest: (.*)$/;

/**
 * A diagnostic block with its `at:` and `stack:` entries folded into one "at file:line" line
 * (they name the same place at length) and its `source:` excerpt moved last, so what was found
 * and wanted comes first.
 * @param {string[]} block
 */
function readable(block) {
  const out = [];
  const source = [];
  const where = {};
  for (let k = 0; k < block.length; k++) {
    const entry = /^\s*(at|stack|source):/.exec(block[k]);
    if (!entry) {
      out.push(block[k]);
      continue;
    }
    const own = indentOf(block[k]);
    if (entry[1] === 'source') source.push(block[k]);
    for (; k + 1 < block.length && indentOf(block[k + 1]) > own; k++) {
      if (entry[1] === 'source') source.push(block[k + 1]);
      const field = entry[1] === 'at' && /^\s*(fileName|lineNumber):\s*(.*)$/.exec(block[k + 1]);
      if (field) where[field[1]] = field[2];
    }
  }
  const at = where.fileName === undefined ? [] : [`at ${where.fileName}${where.lineNumber === undefined ? '' : `:${where.lineNumber}`}`];
  return [...at, ...out, ...source];
}

const files = [];
const assertions = [];
/** The open subtests' names, by depth. */
const openSubtests = [];
for (let i = 0; i < lines.length; i++) {
  const line = lines[i];
  const opened = subtest.exec(line);
  if (opened) {
    openSubtests.length = depthOf(line);
    openSubtests.push(opened[1]);
    continue;
  }
  const failed = failure.exec(line);
  if (!failed) continue;
  const depth = depthOf(line);
  if (depth === 0) {
    // A file's own diagnostic is its command line and exit code; its assertions say more.
    files.push(failed[1]);
    continue;
  }
  // A leaf failure has a diagnostic block ("---" … "...") right after it and no subtests of its own.
  const next = lines[i + 1] ?? '';
  if (next.trim() !== '---') continue;
  const block = [];
  for (let j = i + 2; j < lines.length && lines[j].trim() !== '...'; j++) block.push(lines[j]);
  const diagnostic = readable(block);
  const within = openSubtests.slice(0, depth).join(' › ');
  assertions.push({ name: failed[1], within, diagnostic });
}

if (files.length === 0 && assertions.length === 0) {
  console.log('tap-failures: no "not ok" line in the log; the suite failed outside any test (see above).');
  process.exit(0);
}
console.log(`\n==== failed test files (${files.length}) ====`);
for (const file of files) console.log(`  ${file}`);
console.log(`\n==== failed assertions (${assertions.length}; the first ${Math.min(assertions.length, MAX_ASSERTIONS)}) ====`);
for (const { name, within, diagnostic } of assertions.slice(0, MAX_ASSERTIONS)) {
  console.log(`\n* ${within ? `${within} › ` : ''}${name}`);
  for (const text of diagnostic.slice(0, MAX_DIAGNOSTIC_LINES)) console.log(`    ${text.trim()}`);
  if (diagnostic.length > MAX_DIAGNOSTIC_LINES) console.log(`    … ${diagnostic.length - MAX_DIAGNOSTIC_LINES} more lines`);
}
console.log(`\n==== failed: ${files.join(', ')} ====`);
