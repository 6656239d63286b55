/**
 * Headless Chromium for the web app tests: Debian's `chromium` (installed by
 * scripts/ensure-chromium.sh when missing) driven by playwright-core, with a fresh profile per
 * launch. Screenshots go to test/browser/screenshots/.
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { chromium, type BrowserContext, type Page } from 'playwright-core';
import { repoRoot, tempDir } from './svc.js';

export const CHROMIUM = '/usr/bin/chromium';
export const SCREENSHOTS = path.join(repoRoot, 'test', 'browser', 'screenshots');
export const PHONE = { width: 390, height: 844 };
export const LAPTOP = { width: 1280, height: 800 };

const ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];

function ensureChromium(): void {
  if (fs.existsSync(CHROMIUM)) return;
  execFileSync(path.join(repoRoot, 'scripts', 'ensure-chromium.sh'), { stdio: ['ignore', 'inherit', 'inherit'] });
}

export interface Browser {
  context: BrowserContext;
  close(): Promise<void>;
}

/** A fresh browser profile (so no cookie survives between tests). */
export async function launchBrowser(viewport = LAPTOP): Promise<Browser> {
  ensureChromium();
  const profile = tempDir('svc-chromium-');
  // playwright refuses `--user-data-dir` in args; the persistent context passes the fresh dir itself.
  const context = await chromium.launchPersistentContext(profile, { executablePath: CHROMIUM, headless: true, args: ARGS, viewport, acceptDownloads: true });
  context.setDefaultTimeout(15_000);
  return {
    context,
    async close() {
      await context.close().catch(() => undefined);
      fs.rmSync(profile, { recursive: true, force: true });
    },
  };
}

/**
 * Signs the browser in with a session made through the API: the cookie, and the CSRF token in
 * the app's origin storage where the app keeps it after a login (docs/security.md).
 */
export async function signIn(browser: Browser, url: string, session: { cookie: string; csrf: string }): Promise<void> {
  await browser.context.addCookies([{ name: 'svc_session', value: session.cookie.split('=')[1], url }]);
  await browser.context.addInitScript(
    ({ origin, csrf }) => {
      // An inline PDF's frame is at svc's URL but sandboxed: it has no storage (and needs no token).
      const storage = window.origin === origin ? window.localStorage : null;
      if (storage && storage.getItem('svc.csrf') === null) storage.setItem('svc.csrf', csrf);
    },
    { origin: new URL(url).origin, csrf: session.csrf },
  );
}

/** A page that records console errors and failed requests, so a test can assert there were none. */
export async function newPage(browser: Browser): Promise<Page & { problems: string[] }> {
  const page = (await browser.context.newPage()) as Page & { problems: string[] };
  page.problems = [];
  page.on('pageerror', (err) => page.problems.push(`pageerror: ${err.message}`));
  page.on('console', (msg) => {
    // Failed API answers are part of the flows under test; blocked mail images are the mail frame's CSP at work.
    const expected = /status of (401|403|404|409)|Loading the image .* violates the following Content Security Policy directive: "img-src data:"/;
    if (msg.type() === 'error' && !expected.test(msg.text())) page.problems.push(`console: ${msg.text()}`);
  });
  return page;
}

export async function screenshot(page: Page, name: string): Promise<void> {
  fs.mkdirSync(SCREENSHOTS, { recursive: true });
  await page.screenshot({ path: path.join(SCREENSHOTS, `${name}.png`), fullPage: true });
}
