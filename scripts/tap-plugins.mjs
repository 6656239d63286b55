#!/usr/bin/env node
/**
 * Before the suite: tap's test class is built for the plugins tap.yml names (it leaves out
 * @tapjs/typescript, whose ts-node loader tsx replaces; docs/testing.md, "Suite time"). tap
 * rebuilds it by itself when the list changed, but only for the test files after that run: the
 * run itself still starts every test process with the loaders of the build it began with, so
 * the first suite after `npm ci` would load ts-node into every file as well as tsx. Building
 * first, when the installed build still has the plugin, avoids that.
 */
import { spawnSync } from 'node:child_process';
// @tapjs/core first, as tap's own runner does: @tapjs/test extends its Test class.
import '@tapjs/core';
import { signature } from '@tapjs/test';

if (signature.split('\n').includes('@tapjs/typescript')) {
  const built = spawnSync('npx', ['tap', 'build'], { stdio: ['ignore', 'ignore', 'inherit'] });
  if (built.status !== 0) process.exit(built.status ?? 1);
}
