/**
 * Accessibility (issue 36 §6): axe-core finds no serious or critical violation on any page of the
 * web app, at 1366×800 and at 390×844. The pages are the app's own route table (a new page is
 * checked without touching this file), filled with content from a home in use (test/helpers/
 * showcase.ts: mail received over SMTP, an approval, a domain, API keys, a consent request), plus
 * the setup and login pages a browser without a session sees.
 */
import t from 'tap';
import type { Test } from 'tap';
import fs from 'node:fs';
import { createRequire } from 'node:module';
import type { Page } from 'playwright-core';
import type { AxeResults, RunOptions } from 'axe-core';
import { launchBrowser, newPage, signIn } from '../helpers/browser.js';
import { DESKTOP, LOGIN_PAGE, PHONE, SETUP_PAGE, openSettled, seedShowcase, signedInPages, startShowcase, type ShowcasePage } from '../helpers/showcase.js';

/**
 * Route patterns whose pages are being rebuilt on another branch (the mail list and the message
 * view). They are still checked and their violations printed, as `todo` so they do not fail the
 * run yet; empty this list once the rebuilt pages are merged.
 */
const PAGES_PENDING_REWORK: string[] = [];

/** What fails the test: axe's two highest impacts. */
const FAILING_IMPACTS = new Set(['serious', 'critical']);

const AXE_SOURCE = fs.readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');
/**
 * Mail bodies are drawn in `sandbox=""` frames where no script runs, and their markup is the
 * sender's, not the app's: axe checks the frame element (its title) but not inside it.
 */
const AXE_OPTIONS: RunOptions = { iframes: false, resultTypes: ['violations'] };

/** The serious and critical violations on the page as drawn now, one line each, saying what to fix. */
async function seriousViolations(page: Page): Promise<string[]> {
  if (!(await page.evaluate(() => 'axe' in window))) await page.evaluate(AXE_SOURCE);
  const results = await page.evaluate((options) => (window as unknown as { axe: { run(ctx: Document, o: RunOptions): Promise<AxeResults> } }).axe.run(document, options), AXE_OPTIONS);
  return results.violations
    .filter((v) => FAILING_IMPACTS.has(v.impact ?? ''))
    .map((v) => {
      const nodes = v.nodes.slice(0, 5).map((n) => `${n.target.join(' ')}${n.failureSummary ? ` [${n.failureSummary.split('\n').slice(1, 2).join('').trim()}]` : ''}`);
      return `${v.id} (${v.impact}): ${v.help}; ${v.nodes.length} element(s): ${nodes.join('; ')} (${v.helpUrl})`;
    });
}

const showcase = await startShowcase();
t.teardown(() => showcase.stop());
const base = showcase.svc.url;
const browser = await launchBrowser(DESKTOP);
t.teardown(() => browser.close());
const page = await newPage(browser);

const SIZES = [
  ['1366×800', DESKTOP],
  ['390×844', PHONE],
] as const;

async function check(t: Test, target: ShowcasePage): Promise<void> {
  for (const [size, viewport] of SIZES) {
    await page.setViewportSize(viewport);
    await openSettled(page, base, target);
    const found = await seriousViolations(page);
    // Then what is folded away on first view: closed <details> (the forms to create a key, a
    // webhook, …) and, on a phone, the navigation behind the menu button.
    const unfolded = await page.evaluate(() => {
      const closed = Array.from(document.querySelectorAll('details:not([open])'));
      for (const d of closed) (d as HTMLDetailsElement).open = true;
      return closed.length;
    });
    const menu = page.getByRole('button', { name: 'Menu' });
    const folded = target.pattern !== '' && (await menu.isVisible());
    if (folded) await menu.click();
    if (unfolded > 0 || folded) for (const v of await seriousViolations(page)) if (!found.includes(v)) found.push(`unfolded: ${v}`);
    const pending = PAGES_PENDING_REWORK.includes(target.pattern);
    t.same(found, [], `${target.path} at ${size}: no serious or critical axe violations`, pending ? { todo: 'page being rebuilt (PAGES_PENDING_REWORK)' } : {});
  }
}

// Subtests run one after another: the setup page before the owner exists, then the seeding.
t.test('the setup page, before the owner exists', (t) => check(t, SETUP_PAGE));

t.test('every page, seeded, at both sizes', async (t) => {
  const { session, seeded } = await seedShowcase(showcase);
  await t.test('the login page, without a session', (t) => check(t, LOGIN_PAGE));
  await signIn(browser, base, session);
  const pages = signedInPages(seeded);
  const patterns = pages.map((p) => p.pattern);
  for (const expected of ['/inboxes', '/inboxes/:inbox/threads/:thread', '/needs-you', '/domains/:domain', '/api-keys', '/consent']) t.ok(patterns.includes(expected), `${expected} is in the route list`);
  t.notOk(patterns.includes('/approvals'), 'redirects are left out (their target is checked)');
  for (const target of pages) await t.test(target.path, (t) => check(t, target));
});

t.test('no script errors', async (t) => {
  t.same(page.problems, []);
});
