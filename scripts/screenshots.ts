/**
 * `npm run screenshots`: writes docs/screenshots/<page>-desktop.png (1366×800) and
 * <page>-phone.png (390×844) for every page of the web app, from a real svc in a temp home seeded
 * with realistic content (test/helpers/showcase.ts, the same home the accessibility test checks).
 * Run after `npm run build`; the npm script does both. Old pictures are removed first, so a page
 * that is gone leaves no stale picture behind.
 */
import fs from 'node:fs';
import path from 'node:path';
import { launchBrowser, newPage, signIn } from '../test/helpers/browser.js';
import { repoRoot } from '../test/helpers/svc.js';
import { DESKTOP, LOGIN_PAGE, PHONE, SETUP_PAGE, openSettled, seedShowcase, signedInPages, startShowcase, type ShowcasePage } from '../test/helpers/showcase.js';

const OUT = path.join(repoRoot, 'docs', 'screenshots');
/** Long pages are cut here: the top of a page shows what it is, and the files stay small. */
const MAX_HEIGHT = { desktop: 1600, phone: 2400 };
const SIZES = [
  ['desktop', DESKTOP],
  ['phone', PHONE],
] as const;

fs.mkdirSync(OUT, { recursive: true });
for (const file of fs.readdirSync(OUT)) if (/-(desktop|phone)\.png$/.test(file)) fs.rmSync(path.join(OUT, file));

const showcase = await startShowcase();
const browser = await launchBrowser(DESKTOP);
try {
  const page = await newPage(browser);
  const shoot = async (target: ShowcasePage) => {
    for (const [size, viewport] of SIZES) {
      await page.setViewportSize(viewport);
      await openSettled(page, showcase.svc.url, target);
      // No caret blinking or focus ring from autofocus in the picture.
      await page.evaluate(() => (document.activeElement as HTMLElement | null)?.blur());
      const height = Math.min(await page.evaluate(() => document.documentElement.scrollHeight), MAX_HEIGHT[size]);
      const file = path.join(OUT, `${target.name}-${size}.png`);
      await page.screenshot({ path: file, fullPage: true, clip: { x: 0, y: 0, width: viewport.width, height }, animations: 'disabled', caret: 'hide' });
      console.log(`${path.relative(repoRoot, file)} (${Math.round(fs.statSync(file).size / 1024)} KB)`);
    }
  };
  await shoot(SETUP_PAGE);
  const { session, seeded } = await seedShowcase(showcase);
  await shoot(LOGIN_PAGE);
  await signIn(browser, showcase.svc.url, session);
  for (const target of signedInPages(seeded)) await shoot(target);
  if (page.problems.length) throw new Error(`the pages reported errors:\n${page.problems.join('\n')}`);
} finally {
  await browser.close();
  await showcase.stop();
}
