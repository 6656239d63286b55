/**
 * The owner web app's mail list with a large home (issue 36 §1): seeds BENCH_MESSAGES (100,000)
 * received messages, four to a thread, over four inboxes (half of them unread), then in headless
 * Chromium at 1366×800 measures the first paint of `/mail` (navigation start to the first row and
 * to first contentful paint), the list's own requests, and scrolling: the list is scrolled down
 * through BENCH_SCROLL_THREADS threads one wheel-sized step per animation frame, loading pages
 * as it goes, recording frame times and how many rows are in the DOM. A measurement printed as
 * JSON for docs/web-app.md, not a test.
 *
 * Run: `npm run build && scripts/with-keyring.sh node dist/bench/web-mail.js`.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import readline from 'node:readline';
import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';
import { ensureChromium } from './util.js';
import { unlockHome } from '../src/keys/unlock.js';
import { openDatabase } from '../src/db/open.js';
import { commitInbound } from '../src/mail/store.js';
import { parseMime } from '../workers/pool/parse.js';

const MESSAGES = Number(process.env.BENCH_MESSAGES ?? 100_000);
const SCROLL_THREADS = Number(process.env.BENCH_SCROLL_THREADS ?? 3_000);
const PER_THREAD = 4;
const INBOXES = ['sales', 'support', 'billing', 'alerts'].map((u) => `${u}@web.bench`);
const VIEWPORT = { width: 1366, height: 800 };
/** Pixels scrolled per frame: a fast flick of the wheel. */
const SCROLL_STEP_PX = 400;
/** web/src/pages/mail-client.tsx ROW_HEIGHT. */
const ROW_HEIGHT = 44;
const PASSWORD = 'correct horse battery staple';
const SEED_START_MS = Date.UTC(2026, 0, 1);

function repoRoot(): string {
  let dir = path.dirname(fileURLToPath(import.meta.url));
  while (!fs.existsSync(path.join(dir, 'package.json'))) dir = path.dirname(dir);
  return dir;
}

interface Running {
  proc: ChildProcess;
  url: string;
  setupCode: string | null;
  stop(): Promise<void>;
}

async function serve(home: string, init: boolean): Promise<Running> {
  const proc = spawn(process.execPath, [path.join(repoRoot(), 'bin', 'svc'), 'serve', '--home', home, '--port', '0', ...(init ? ['--init'] : [])], { stdio: ['ignore', 'pipe', 'inherit'] });
  let setupCode: string | null = null;
  const url = await new Promise<string>((resolve, reject) => {
    readline.createInterface({ input: proc.stdout! }).on('line', (line) => {
      const data = JSON.parse(line) as { event?: string; url?: string; code?: string };
      if (data.event === 'owner.setup_required') setupCode = data.code ?? null;
      if (data.event === 'server.ready') resolve(data.url!);
    });
    proc.once('exit', (code) => reject(new Error(`svc exited ${code}`)));
  });
  return { proc, url, setupCode, stop: () => new Promise<void>((r) => (proc.once('exit', () => r()), proc.kill('SIGTERM'))) };
}

async function seed(home: string): Promise<number> {
  const { dbKey } = unlockHome(home, false);
  const db = openDatabase(path.join(home, 'svc.db'), dbKey, { migrate: false });
  dbKey.fill(0);
  const raw = new TextEncoder().encode('From: a@example.test\r\nTo: x@web.bench\r\nSubject: x\r\nMessage-ID: <t@web.bench>\r\n\r\nbody\r\n');
  const template = await parseMime(raw);
  const started = Date.now();
  const batch = db.transaction((from: number, to: number) => {
    for (let i = from; i < to; i++) {
      const thread = Math.floor(i / PER_THREAD);
      const first = i % PER_THREAD === 0;
      const inboxId = INBOXES[thread % INBOXES.length];
      const date = new Date(SEED_START_MS + i * 60_000).toISOString();
      const parsed = {
        ...template,
        messageId: `<w${i}@web.bench>`,
        inReplyTo: first ? null : `<w${i - 1}@web.bench>`,
        references: first ? [] : [`<w${thread * PER_THREAD}@web.bench>`],
        subject: `${first ? '' : 'Re: '}Order ${thread} status`,
        from: [{ address: `customer${i % 700}@example.test`, name: `Customer ${i % 700}` }],
        to: [{ address: inboxId, name: '' }],
        text: `Hello, a question about order ${thread}, message ${i}.`,
        date,
      };
      const result = commitInbound(db, { inboxId, parsed, raw, sourceKey: `web-${i}`, receivedAt: date });
      // Half the threads read: `unread` off every message of the even ones.
      if (thread % 2 === 0) db.prepare("DELETE FROM message_labels WHERE message_rowid = ? AND label = 'unread'").run(result.messageRowid);
    }
  });
  for (let i = 0; i < MESSAGES; i += 1000) batch(i, Math.min(MESSAGES, i + 1000));
  db.pragma('wal_checkpoint(TRUNCATE)');
  db.close();
  return (Date.now() - started) / 1000;
}

const pct = (values: number[], p: number) => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted.length ? +sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))].toFixed(1) : 0;
};

async function main(): Promise<void> {
  ensureChromium();
  const home = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'svc-web-bench-')), 'home');
  let svc = await serve(home, true);
  const token = (JSON.parse(fs.readFileSync(path.join(home, 'connection.json'), 'utf8')) as { owner_token: string }).owner_token;
  for (const inbox of INBOXES) {
    const [username, domain] = inbox.split('@');
    await fetch(`${svc.url}/v0/inboxes`, { method: 'POST', headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' }, body: JSON.stringify({ username, domain }) });
  }
  await svc.stop();
  const seedSeconds = await seed(home);
  svc = await serve(home, false);
  // Each start prints its own setup code.
  const setup = await fetch(`${svc.url}/v0/owner/setup`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ password: PASSWORD, code: svc.setupCode }) });
  const session = (await setup.json()) as { csrf_token: string };
  if (!setup.ok) throw new Error(`owner setup failed: ${setup.status} ${JSON.stringify(session)}`);
  const cookie = (setup.headers.get('set-cookie') ?? '').split(';')[0];

  const profile = fs.mkdtempSync(path.join(os.tmpdir(), 'svc-web-bench-chromium-'));
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: '/usr/bin/chromium',
    headless: true,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
    viewport: VIEWPORT,
  });
  try {
    await context.addCookies([{ name: cookie.split('=')[0], value: cookie.split('=')[1], url: svc.url }]);
    // Browser code is passed as text: this file compiles without the DOM library.
    await context.addInitScript(`window.localStorage.setItem('svc.csrf', ${JSON.stringify(session.csrf_token)})`);
    const page = await context.newPage();
    const apiTimes: Record<string, number[]> = {};
    page.on('requestfinished', (req) => {
      const u = new URL(req.url());
      if (!u.pathname.startsWith('/v0/owner/mail/')) return;
      const timing = req.timing();
      (apiTimes[u.pathname] ??= []).push(+(timing.responseEnd - timing.requestStart).toFixed(1));
    });
    const firstPaint = async () => {
      await page.goto(`${svc.url}/mail`);
      await page.locator('.mail-row').first().waitFor({ timeout: 60_000 });
      return page.evaluate<{ first_row_ms: number; first_contentful_paint_ms: number | null }>(`(() => {
        const nav = performance.getEntriesByType('navigation')[0];
        const fcp = performance.getEntriesByName('first-contentful-paint')[0];
        return { first_row_ms: +(performance.now() - nav.startTime).toFixed(0), first_contentful_paint_ms: fcp ? +fcp.startTime.toFixed(0) : null };
      })()`);
    };
    const cold = await firstPaint(); // the read cache and SQLite's pages are cold
    const warm = await firstPaint();
    const scroll = await page.evaluate<{ frames: number[]; maxRows: number; loaded: number; seconds: number }>(`(async ({ threads, step, rowHeight }) => {
        const list = document.querySelector('[data-testid="threads"]');
        const frames = [];
        let maxRows = 0;
        let last = performance.now();
        const started = last;
        while (list.scrollTop + list.clientHeight < threads * rowHeight && performance.now() - started < 120_000) {
          list.scrollTop += step;
          await new Promise((r) => requestAnimationFrame(r));
          const now = performance.now();
          frames.push(now - last);
          last = now;
          maxRows = Math.max(maxRows, list.querySelectorAll('.mail-row').length);
        }
        return { frames, maxRows, loaded: Number(list.dataset.count), seconds: (performance.now() - started) / 1000 };
      })(${JSON.stringify({ threads: SCROLL_THREADS, step: SCROLL_STEP_PX, rowHeight: ROW_HEIGHT })})`);
    // j moves the selection: time from the key to the next frame, near the end of the loaded list.
    await page.locator('.mail-title').click();
    const keyMs = await page.evaluate<number>(`(async () => {
      const t0 = performance.now();
      window.dispatchEvent(new KeyboardEvent('keydown', { key: 'j', bubbles: true }));
      await new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r)));
      return +(performance.now() - t0).toFixed(1);
    })()`);
    console.log(
      JSON.stringify(
        {
          messages: MESSAGES,
          threads: MESSAGES / PER_THREAD,
          inboxes: INBOXES.length,
          seed_seconds: +seedSeconds.toFixed(1),
          first_paint_cold: cold,
          first_paint_warm: warm,
          owner_mail_requests_ms: Object.fromEntries(Object.entries(apiTimes).map(([k, v]) => [k, { n: v.length, p50: pct(v, 50), max: Math.max(...v) }])),
          scroll: {
            threads_loaded: scroll.loaded,
            seconds: +scroll.seconds.toFixed(1),
            frames: scroll.frames.length,
            frame_ms_p50: pct(scroll.frames, 50),
            frame_ms_p95: pct(scroll.frames, 95),
            frame_ms_max: +Math.max(...scroll.frames).toFixed(1),
            max_rows_in_dom: scroll.maxRows,
          },
          j_key_to_second_frame_ms: keyMs,
          cpus: os.cpus().length,
        },
        null,
        2,
      ),
    );
  } finally {
    await context.close();
    await svc.stop();
    fs.rmSync(profile, { recursive: true, force: true });
    fs.rmSync(path.dirname(home), { recursive: true, force: true });
  }
}

await main();
