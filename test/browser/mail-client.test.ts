/**
 * The mail client as a person uses it (issue 36 §1, §2), in headless Chromium against a real
 * `svc serve` with mail committed into its home: the unified list with unread counts per inbox,
 * dense rows, j/k moving the selection, Enter opening the reading pane beside the list, `/`
 * focusing search, chips filtering, `e` archiving, `?` showing the keys; in a message the
 * extracted code with its copy button, a link with its real target, headers, the raw source, an
 * image preview; and on a phone the list and the reading pane stacked.
 */
import t from 'tap';
import { api, setupOwner, startSvc } from '../helpers/svc.js';
import { openHomeDb } from '../helpers/db.js';
import { seedMail, simpleMail } from '../helpers/mail.js';
import { createInbox } from '../helpers/seed.js';
import { pdf } from '../helpers/documents.js';
import { until } from '../helpers/until.js';
import { launchBrowser, newPage, PHONE, screenshot, signIn } from '../helpers/browser.js';

/** The laptop the issue names: Gmail and Mailpit fit 15–25 rows here. */
const LAPTOP_1366 = { width: 1366, height: 800 };

const svc = await startSvc();
t.teardown(() => svc.stop());
const session = await setupOwner(svc);
const work = await createInbox(svc, 'work@mail.test');
const home = await createInbox(svc, 'home@mail.test');

const db = openHomeDb(svc.home);
t.teardown(() => db.close());
const at = (minutes: number) => new Date(Date.UTC(2026, 0, 5, 9, minutes)).toISOString();
for (let i = 0; i < 30; i++) {
  await seedMail(db, simpleMail({ from: `Sender ${i} <s${i}@far.test>`, to: i % 2 ? work : home, subject: `Filler number ${i}`, body: `Body of filler ${i}.` }), { inboxId: i % 2 ? work : home, receivedAt: at(i) });
}
const png = Buffer.from('iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==', 'base64');
const codeMail = [
  'From: Login Service <noreply@service.test>',
  `To: ${work}`,
  'Subject: Your sign-in code',
  'Message-ID: <code-1@service.test>',
  'Authentication-Results: mx.service.test; spf=pass smtp.mailfrom=service.test; dkim=pass header.d=service.test; dmarc=pass header.from=service.test',
  'MIME-Version: 1.0',
  'Content-Type: multipart/mixed; boundary="b1"',
  '',
  '--b1',
  'Content-Type: text/html; charset=utf-8',
  '',
  '<p>Your verification code is <b>482913</b>. It expires in 10 minutes.</p><p><a href="https://accounts.service.test/verify?token=abc123">Verify your email</a></p>',
  '--b1',
  'Content-Type: image/png; name="logo.png"',
  'Content-Disposition: attachment; filename="logo.png"',
  'Content-Transfer-Encoding: base64',
  '',
  png.toString('base64'),
  '--b1',
  'Content-Type: application/pdf; name="invoice.pdf"',
  'Content-Disposition: attachment; filename="invoice.pdf"',
  'Content-Transfer-Encoding: base64',
  '',
  pdf([['Invoice 2026-11', 'Total due: 42 EUR']]).toString('base64'),
  '--b1--',
  '',
].join('\r\n');
// svc's own verdict, as the edge evaluated it (the Authentication-Results header above is only what the message says).
const verdict = {
  spf: { result: 'pass' as const, domain: 'service.test' },
  dkim: { result: 'pass' as const, signatures: [{ domain: 'service.test', selector: 's2026', result: 'pass' as const, aligned: true }] },
  dmarc: { result: 'pass' as const, policy: 'reject', domain: 'service.test' },
  arc: { result: 'none' as const },
};
await seedMail(db, codeMail, { inboxId: work, receivedAt: at(40), auth: verdict });
await seedMail(db, simpleMail({ from: 'Ada <ada@far.test>', to: home, subject: 'Picnic on Sunday', body: 'Bring apples.' }), { inboxId: home, receivedAt: at(41) });

const browser = await launchBrowser(LAPTOP_1366);
t.teardown(() => browser.close());
await signIn(browser, svc.url, session);
await browser.context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: svc.url });
const page = await newPage(browser);
const rows = page.locator('[data-testid="threads"] .mail-row');
const selectedSubject = () => page.locator('[data-testid="threads"] .mail-row.selected .row-subject').textContent();
/**
 * Key presses that all arrive before the next frame is drawn, as a held-down key or a fast typist
 * sends them; with `rendersBetween` the page renders after each (Preact renders in a microtask), but
 * no effect that waits for a paint has run. Resolves after the next frame.
 */
const pressWithinOneFrame = (keys: string[], rendersBetween: boolean) =>
  page.evaluate(
    async ({ keys, rendersBetween }) => {
      for (const key of keys) {
        window.dispatchEvent(new KeyboardEvent('keydown', { key, bubbles: true, cancelable: true }));
        if (rendersBetween) await Promise.resolve();
      }
      await new Promise((done) => requestAnimationFrame(() => setTimeout(done, 0)));
    },
    { keys, rendersBetween },
  );

t.test('the app opens on one list over every inbox, with unread counts per inbox', async (t) => {
  await page.goto(svc.url + '/');
  await page.waitForURL(/\/mail$/);
  await rows.first().waitFor();
  t.equal(await rows.first().locator('.row-subject').textContent(), 'Picnic on Sunday', 'newest first, across inboxes');
  t.ok(await page.locator('.mail-row', { hasText: 'Your sign-in code' }).count(), 'the other inbox is in the same list');
  const sidebar = page.getByTestId('mail-sidebar');
  t.equal(await sidebar.locator(`[data-mailbox="${work}"] .count`).textContent(), '16');
  t.equal(await sidebar.locator(`[data-mailbox="${home}"] .count`).textContent(), '16');
  t.equal(await sidebar.locator('[data-mailbox="all"] .count').textContent(), '32');
  const box = await rows.first().boundingBox();
  t.ok(box && box.height <= 52, `a row is one or two lines (${box?.height} px)`);
  const listBox = await page.getByTestId('threads').boundingBox();
  const visible = Math.floor((listBox?.height ?? 0) / (box?.height ?? 1));
  t.ok(visible >= 15, `at least 15 rows fit at 1366×800 (${visible})`);
  t.ok((await rows.count()) < 32, 'rows outside the viewport are not drawn');
  await screenshot(page, 'mail-list');
});

t.test('j and k move the selection, Enter opens the reading pane beside the list', async (t) => {
  t.equal(await selectedSubject(), 'Picnic on Sunday');
  await page.keyboard.press('j');
  t.equal(await selectedSubject(), 'Your sign-in code');
  await page.keyboard.press('j');
  await page.keyboard.press('k');
  t.equal(await selectedSubject(), 'Your sign-in code', 'back up one');
  // A held-down key repeats faster than the page draws: presses that arrive between two frames each
  // move on from the one before, also with no render between them.
  await pressWithinOneFrame(['j', 'j', 'j', 'k'], false);
  t.equal(await selectedSubject(), 'Filler number 28', 'four presses in one frame move three down and one up');
  await pressWithinOneFrame(['k', 'k'], false);
  t.equal(await selectedSubject(), 'Your sign-in code', 'and back');
  await page.keyboard.press('Enter');
  const reader = page.getByTestId('reader');
  await reader.getByRole('heading', { name: 'Your sign-in code' }).waitFor();
  t.ok(await page.getByTestId('threads').isVisible(), 'the list stays beside the pane');
  const listBox = await page.getByTestId('threads').boundingBox();
  const readerBox = await reader.boundingBox();
  t.ok(listBox && readerBox && readerBox.x >= listBox.x + listBox.width - 1, 'the pane is to the right of the list');
  await page.locator(`[data-mailbox="${work}"] .count`).filter({ hasText: '15' }).waitFor();
  t.pass('reading it lowered the unread count');
});

t.test('the message shows the extracted code with a copy button and the link with its real target', async (t) => {
  const extracted = page.getByTestId('extracted');
  await extracted.waitFor();
  t.equal(await extracted.locator('.code-value').textContent(), '482913');
  await page.getByRole('button', { name: 'Copy code 482913' }).click();
  await page.getByRole('button', { name: 'Copy code 482913' }).filter({ hasText: 'Copied' }).waitFor();
  t.equal(await page.evaluate(() => navigator.clipboard.readText()), '482913', 'the code is on the clipboard');
  const link = extracted.locator('a.link-target');
  t.equal(await link.getAttribute('href'), 'https://accounts.service.test/verify?token=abc123');
  t.match(await link.textContent(), /accounts\.service\.test\/verify\?token=abc123/, 'the real target is shown');
  t.equal(await link.getAttribute('rel'), 'noopener noreferrer');
  const preview = page.getByTestId('attachment-preview');
  await preview.waitFor();
  await page.waitForFunction(() => (document.querySelector('[data-testid="attachment-preview"]') as HTMLImageElement | null)?.naturalWidth === 1);
  t.pass('the image attachment is previewed');
  const pdfFrame = page.getByTestId('attachment-pdf');
  await pdfFrame.waitFor();
  t.equal(await pdfFrame.getAttribute('title'), 'First page of invoice.pdf');
  t.match(await pdfFrame.getAttribute('src'), /\/v0\/downloads\/[^?]+\?view=inline#page=1/, 'the download URL, inline, at its first page');
  // Chromium hands the frame's document to its own PDF viewer (an extension frame inside it): the file was shown, not downloaded or refused.
  await until('the PDF viewer took the frame', () => page.frames().some((f) => f.url().startsWith('chrome-extension://mhjfbmdgcfjbbpaeojofohoefgiehjai/')));
  t.pass("the PDF's first page is shown in the browser's own viewer");
  await screenshot(page, 'mail-reading-pane');
});

t.test('details show authentication and headers; the source view shows the raw message', async (t) => {
  await page.getByRole('button', { name: 'Details' }).click();
  const auth = page.getByTestId('auth-verdict');
  await auth.waitFor();
  t.match(await auth.textContent(), /SPF\s*pass\s*service\.test/, "svc's SPF verdict with the domain");
  t.match(await auth.textContent(), /DKIM\s*pass\s*service\.test \(s2026\): pass, aligned/, 'each DKIM signature with its domain');
  t.match(await auth.textContent(), /DMARC\s*pass\s*service\.test \(policy reject\)/);
  t.match(await page.getByTestId('auth-recorded').textContent(), /SPF\s*pass\s*service\.test/, "the message's own header, shown apart");
  t.match(await page.getByTestId('headers').textContent(), /Message-ID\s*<code-1@service\.test>/i);
  await page.getByRole('button', { name: 'View source' }).click();
  const raw = page.getByTestId('raw-source');
  await raw.waitFor();
  t.match(await raw.textContent(), /Content-Type: multipart\/mixed; boundary="b1"/);
  const [download] = await Promise.all([page.waitForEvent('download'), page.getByRole('button', { name: 'Download .eml' }).click()]);
  t.match(download.suggestedFilename(), /\.eml$/);
});

t.test('/ focuses search; chips filter the list and come off again', async (t) => {
  await page.keyboard.press('Escape');
  await page.locator('.mail-title').click();
  await page.keyboard.press('/');
  t.ok(await page.getByLabel('Search mail').evaluate((el) => el === document.activeElement), 'the search box has focus');
  await page.keyboard.type('from:ada');
  await page.keyboard.press('Enter');
  await page.waitForURL(/q=from%3Aada/);
  await page.locator('[data-chip="from:ada"]').waitFor();
  await rows.first().waitFor();
  t.same(await rows.locator('.row-subject').allTextContents(), ['Picnic on Sunday']);
  await page.getByRole('button', { name: 'Remove filter from:ada' }).click();
  await page.waitForURL(/\/mail$/);
  await page.getByRole('button', { name: 'Has attachment' }).click();
  await page.waitForURL(/has%3Aattachment/);
  await page.locator('.mail-row .row-subject', { hasText: 'Your sign-in code' }).waitFor();
  await page.locator('.mail-row .row-subject', { hasText: 'Filler' }).first().waitFor({ state: 'detached' });
  t.equal(await rows.count(), 1, 'only the thread with an attachment');
  await page.getByRole('button', { name: 'Has attachment' }).click();
  await page.getByRole('button', { name: 'Unread' }).click();
  await page.waitForURL(/is%3Aunread/);
  await page.locator('.mail-row .row-subject', { hasText: 'Your sign-in code' }).waitFor({ state: 'detached' });
  t.notOk(await page.locator('.mail-row:not(.unread)').count(), 'only unread threads');
  await page.getByRole('button', { name: 'Unread' }).click();
  await page.waitForURL(/\/mail$/);
  await page.getByLabel('Search mail').fill('apples');
  await page.getByLabel('Search mail').press('Enter');
  await page.locator('.mail-row .row-subject', { hasText: 'Picnic on Sunday' }).waitFor();
  t.equal(await rows.count(), 1, 'full-text search');
});

t.test('e archives the selected thread, Undo brings it back; ? lists the keys', async (t) => {
  await page.goto(svc.url + '/mail');
  await rows.first().waitFor();
  await page.locator('.mail-title').click();
  t.equal(await selectedSubject(), 'Picnic on Sunday');
  await page.keyboard.press('e');
  await page.getByRole('status').filter({ hasText: 'Archived.' }).waitFor();
  await page.locator('.mail-row .row-subject', { hasText: 'Picnic on Sunday' }).waitFor({ state: 'detached' });
  const threads = await api<{ threads: { subject: string; labels: string[] }[] }>(svc.url, 'GET', '/v0/threads?labels=archived', { token: svc.ownerToken });
  t.same(threads.body.threads.map((x) => x.subject), ['Picnic on Sunday'], 'labelled archived');
  await page.getByRole('button', { name: 'Undo' }).click();
  await page.locator('.mail-row .row-subject', { hasText: 'Picnic on Sunday' }).waitFor();
  await page.keyboard.press('?');
  const help = page.getByRole('dialog', { name: 'Keyboard shortcuts' });
  await help.waitFor();
  t.match(await help.textContent(), /archive/);
  await page.keyboard.press('Escape');
  await help.waitFor({ state: 'detached' });
  // Escape right after ? (rendered, not yet painted) acts on the open help: it closes it.
  await pressWithinOneFrame(['?', 'Escape'], true);
  t.equal(await help.count(), 0, 'the help opened and closed within one frame');
});

t.test('choosing inboxes narrows All inboxes', async (t) => {
  await page.getByRole('button', { name: 'Choose inboxes' }).click();
  await page.getByLabel(`Show ${home} in All inboxes`).uncheck();
  await page.locator('.mail-row .row-subject', { hasText: 'Picnic on Sunday' }).waitFor({ state: 'detached' });
  t.equal(await page.locator('[data-mailbox="all"] .count').textContent(), '15', 'the count follows the choice');
  await page.getByLabel(`Show ${home} in All inboxes`).check();
  await page.locator('.mail-row .row-subject', { hasText: 'Picnic on Sunday' }).waitFor();
  await page.getByRole('button', { name: 'Done' }).click();
});

t.test('on a phone the list and the reading pane are stacked', async (t) => {
  await page.setViewportSize(PHONE);
  await page.goto(svc.url + '/mail');
  await rows.first().waitFor();
  const list = await page.getByTestId('threads').boundingBox();
  t.ok(list && list.width >= PHONE.width - 2, 'the list takes the full width');
  t.notOk(await page.getByTestId('reader').count(), 'no pane before a thread is opened');
  await screenshot(page, 'mail-phone-list');
  await rows.filter({ hasText: 'Picnic on Sunday' }).click();
  const reader = page.getByTestId('reader');
  await reader.getByRole('heading', { name: 'Picnic on Sunday' }).waitFor();
  t.notOk(await page.getByTestId('threads').isVisible(), 'the pane replaces the list');
  await screenshot(page, 'mail-phone-thread');
  await page.getByRole('button', { name: 'Back to the list' }).click();
  await page.getByTestId('threads').waitFor();
  t.ok(await page.getByTestId('threads').isVisible(), 'back to the list');
  t.same(page.problems, [], 'no script errors');
});
