/**
 * A home that looks in use, for checks that walk every page of the web app (the accessibility
 * test) and for the screenshots in docs/screenshots/: a real `svc serve --local-edge`, inboxes
 * with mail received over real SMTP, API keys, an agent's reply waiting for approval, a scheduled
 * draft, a domain, a webhook, a block-list entry and an OAuth consent request. The pages come
 * from the app's own route table (web/src/routes.tsx), so a page added there is visited too.
 */
import fs from 'node:fs';
import path from 'node:path';
import nodemailer, { type SendMailOptions } from 'nodemailer';
import type { Page } from 'playwright-core';
import { api, repoRoot, setupOwner, startSvc, type RunningSvc } from './svc.js';
import { startLoopbackDns, type LoopbackDns } from './dns.js';
import { register, pkce, startConsent } from './oauth.js';
import { until } from './until.js';

export const DESKTOP = { width: 1366, height: 800 };
export const PHONE = { width: 390, height: 844 };

/** Mail goes through the edge and back in: generous, since tests share two cores. */
const DELIVERY_MS = 60_000;
/** The edge answers 451 until it has the new inboxes' routing. */
const ROUTING_RETRY_MS = 200;

export interface AppRoute {
  pattern: string;
  /** An old path that only forwards to another page. */
  redirect: boolean;
}

/** The app's route table, read from its source (the app is built for the browser, not for Node). */
export function appRoutes(): AppRoute[] {
  const source = fs.readFileSync(path.join(repoRoot, 'web', 'src', 'routes.tsx'), 'utf8');
  const table = source.slice(source.indexOf('export const routes'));
  const routes: AppRoute[] = [];
  for (const m of table.matchAll(/^\s*\['(\/[^']*)',\s*(.*)\],?\s*$/gm)) routes.push({ pattern: m[1], redirect: m[2].includes('redirect(') });
  if (routes.length < 10) throw new Error(`read only ${routes.length} routes from web/src/routes.tsx: has its format changed?`);
  return routes;
}

export interface ShowcasePage {
  /** File-name friendly: docs/screenshots/<name>-desktop.png. */
  name: string;
  path: string;
  /** The route pattern it stands for ('' for the signed-out pages). */
  pattern: string;
}

/** Shorter names for the pages whose pattern has parameters. */
const PAGE_NAMES: Record<string, string> = {
  '/inboxes/:inbox': 'inbox',
  '/inboxes/:inbox/threads/:thread': 'thread',
  '/domains/:domain': 'domain',
};

export interface Seeded {
  inbox: string;
  threadId: string;
  domainId: string;
  consentRequestId: string;
}

/**
 * Every page to visit signed in: each non-redirect route, its parameters filled from the seeded
 * content and a query where the page needs one to show something. A parameter nobody seeded is
 * an error, so a new page with a new parameter is noticed here rather than silently skipped.
 */
export function signedInPages(seeded: Seeded): ShowcasePage[] {
  const params: Record<string, string> = { inbox: seeded.inbox, thread: seeded.threadId, domain: seeded.domainId };
  const queries: Record<string, string> = {
    '/compose': `?inbox=${encodeURIComponent(seeded.inbox)}`,
    '/consent': `?request=${encodeURIComponent(seeded.consentRequestId)}`,
  };
  return appRoutes()
    .filter((r) => !r.redirect)
    .map(({ pattern }) => {
      const filled = pattern.replace(/:(\w+)/g, (_, name: string) => {
        if (!(name in params)) throw new Error(`route ${pattern}: nothing seeded for :${name} (add it to test/helpers/showcase.ts)`);
        return encodeURIComponent(params[name]);
      });
      return { name: PAGE_NAMES[pattern] ?? pattern.slice(1).replace(/[/:]+/g, '-'), path: filled + (queries[pattern] ?? ''), pattern };
    });
}

/** The pages a browser without a session sees: setup (before the owner exists), then login. */
export const SETUP_PAGE: ShowcasePage = { name: 'setup', path: '/setup', pattern: '' };
export const LOGIN_PAGE: ShowcasePage = { name: 'login', path: '/login', pattern: '' };

export interface Showcase {
  svc: RunningSvc;
  dns: LoopbackDns;
  smtpPort: number;
  stop(): Promise<void>;
}

/** A fresh home with its built-in edge, the owner not set up yet (so the setup page shows). */
export async function startShowcase(): Promise<Showcase> {
  const dns = await startLoopbackDns({});
  const svc = await startSvc({ args: ['--local-edge', '--edge-dns', dns.server] });
  const smtpPort = Number(String(svc.stdoutLines.find((l) => l.event === 'server.ready')!.smtp).split(':')[1]);
  return {
    svc,
    dns,
    smtpPort,
    async stop() {
      await svc.stop();
      await dns.close();
    },
  };
}

async function ok<T>(what: string, res: Promise<{ status: number; body: T; text: string }>, expected = 200): Promise<T> {
  const r = await res;
  if (r.status !== expected) throw new Error(`${what}: ${r.status} ${r.text}`);
  return r.body;
}

/** Mail from people outside, as an agent's support inbox receives it. */
const INCOMING: SendMailOptions[] = [
  {
    from: 'Ada Lovelace <ada@analytical.example>',
    subject: 'Invoice 2041 for October',
    text: 'Hello,\n\nPlease find the October invoice attached. Payment is due within 30 days.\n\nBest regards,\nAda',
    html: '<p>Hello,</p><p>Please find the <b>October invoice</b> attached. Payment is due within 30 days.</p><p>Best regards,<br>Ada</p>',
    attachments: [{ filename: 'invoice-2041.csv', content: 'item,amount\nconsulting,1200\nhosting,80\n', contentType: 'text/csv' }],
  },
  {
    from: 'Grace Hopper <grace@compiler.example>',
    subject: 'Can we move Thursday’s call?',
    text: 'Hi, something came up on Thursday. Would Friday at 10:00 work for you instead?\n\nGrace',
  },
  {
    from: 'Shipping updates <noreply@parcels.example>',
    subject: 'Your order #88213 has shipped',
    text: 'Your order #88213 is on its way and should arrive on Monday.',
  },
  {
    from: 'Alan Turing <alan@bletchley.example>',
    subject: 'Question about the API rate limits',
    text: 'Hello, our integration gets a 429 now and then. What are the limits per key, and is there a way to raise them?\n\nThanks, Alan',
  },
];

/**
 * Seeds the owner and everything the pages show. Returns the owner's browser session and the ids
 * the page list needs.
 */
export async function seedShowcase(showcase: Showcase): Promise<{ session: { cookie: string; csrf: string }; seeded: Seeded }> {
  const { svc } = showcase;
  const session = await setupOwner(svc);
  const owner = { token: svc.ownerToken };
  const inboxes: [string, string][] = [
    ['support', 'Support agent'],
    ['research', 'Research agent'],
    ['billing', 'Billing agent'],
  ];
  for (const [username, display_name] of inboxes) await ok(`inbox ${username}`, api(svc.url, 'POST', '/v0/inboxes', { ...owner, body: { username, domain: 'local.test', display_name } }));
  const inbox = 'support@local.test';
  const inboxPath = `/v0/inboxes/${encodeURIComponent(inbox)}`;

  const smtp = nodemailer.createTransport({ host: '127.0.0.1', port: showcase.smtpPort, secure: false, ignoreTLS: true });
  for (const mail of INCOMING) {
    const deadline = Date.now() + DELIVERY_MS;
    for (;;) {
      try {
        await smtp.sendMail({ ...mail, to: `Support agent <${inbox}>` });
        break;
      } catch (err) {
        if ((err as { responseCode?: number }).responseCode !== 451 || Date.now() > deadline) throw err;
        await new Promise((r) => setTimeout(r, ROUTING_RETRY_MS));
      }
    }
  }
  smtp.close();
  type Thread = { thread_id: string; subject: string };
  const threads = await until(
    'the seeded mail to arrive',
    async () => {
      const listed = await api<{ threads: Thread[] }>(svc.url, 'GET', `${inboxPath}/threads`, owner);
      return listed.body.threads?.length === INCOMING.length ? listed.body.threads : undefined;
    },
    DELIVERY_MS,
  );
  const invoice = threads.find((th) => th.subject.startsWith('Invoice'))!;
  const question = threads.find((th) => th.subject.startsWith('Question'))!;

  // A conversation between two of the home's own inboxes (mail to the outside would bounce here:
  // the loopback DNS knows no other domain).
  await ok(
    'billing question',
    api(svc.url, 'POST', '/v0/inboxes/billing%40local.test/messages/send', {
      ...owner,
      body: { to: inbox, subject: 'Refund for order #88213?', text: 'The customer behind order #88213 asks for a refund. Can support confirm the parcel came back?' },
    }),
  );
  const refund = await until(
    'the billing question to arrive',
    async () => {
      const listed = await api<{ messages: { message_id: string; subject: string }[] }>(svc.url, 'GET', `${inboxPath}/messages`, owner);
      return listed.body.messages?.find((m) => m.subject.startsWith('Refund'));
    },
    DELIVERY_MS,
  );
  await ok(
    'owner reply',
    api(svc.url, 'POST', `${inboxPath}/messages/${encodeURIComponent(refund.message_id)}/reply`, {
      ...owner,
      body: { text: 'Yes, it arrived back on Tuesday. Go ahead with the refund.' },
    }),
  );

  const keys = [
    { name: 'Support agent', inbox_ids: [inbox], permissions: ['inbox_read', 'message_read', 'draft_read', 'message_update', 'message_reply'], send_policy: 'approval' },
    { name: 'Research agent', inbox_ids: ['research@local.test'], permissions: ['inbox_read', 'message_read', 'draft_read'], send_policy: 'read_only' },
    { name: 'Billing automation', inbox_ids: ['billing@local.test'], permissions: ['inbox_read', 'message_read', 'message_send', 'message_reply', 'draft_read'], send_policy: 'guarded' },
  ];
  const secrets: Record<string, string> = {};
  for (const key of keys) secrets[key.name] = (await ok(`key ${key.name}`, api<{ api_key: string }>(svc.url, 'POST', '/v0/api-keys', { ...owner, body: key }))).api_key;

  // The support agent answers a customer; its policy makes that wait for the owner.
  const questionMessages = await ok('question thread', api<{ messages: { message_id: string }[] }>(svc.url, 'GET', `${inboxPath}/threads/${encodeURIComponent(question.thread_id)}`, owner));
  await ok(
    'agent reply for approval',
    api(svc.url, 'POST', `${inboxPath}/messages/${encodeURIComponent(questionMessages.messages[0].message_id)}/reply`, {
      token: secrets['Support agent'],
      body: { text: 'Hello Alan,\n\nEach key may make 60 requests a minute. For more, reply with your expected volume and we will raise it.\n\nSupport' },
    }),
    403,
  );

  await ok(
    'scheduled draft',
    api(svc.url, 'POST', '/v0/inboxes/research%40local.test/drafts', {
      ...owner,
      body: { to: ['grace@compiler.example'], subject: 'Weekly research summary', text: 'This week’s summary is below.', send_at: new Date(Date.now() + 86_400_000).toISOString() },
    }),
  );
  const domain = await ok('domain', api<{ domain_id: string }>(svc.url, 'POST', '/v0/domains', { ...owner, body: { domain: 'agents.example.test' } }));
  await ok('webhook', api(svc.url, 'POST', '/v0/webhooks', { ...owner, body: { url: 'http://127.0.0.1:9/hooks/svc', event_types: ['message.received'] } }));
  await ok('block entry', api(svc.url, 'POST', '/v0/lists/receive/block', { ...owner, body: { entry: 'spam.example.test', reason: 'bulk mail nobody asked for' } }));

  const client = await ok('oauth client', register(svc.url, { client_name: 'Notes assistant' }), 201);
  const consentRequestId = await startConsent(svc.url, session, { clientId: client.client_id, resource: `${svc.url}/mcp`, challenge: pkce().challenge });

  return { session, seeded: { inbox, threadId: invoice.thread_id, domainId: domain.domain_id, consentRequestId } };
}

/**
 * Opens a page and waits until it is drawn with its data: a heading in main (drawn), no "Loading…" left,
 * and, signed in, the live badge connected (so screenshots show the state an owner sees).
 */
export async function openSettled(page: Page, base: string, target: ShowcasePage): Promise<void> {
  await page.goto(base + target.path);
  // Attached, not visible: the mail client hides its own heading on a phone, where the list is the page.
  await page.locator('main h1').first().waitFor({ state: 'attached' });
  await page.waitForFunction(() => !document.querySelector('main')?.textContent?.includes('Loading…'));
  if (target.pattern) await page.locator('[data-live="live"]').waitFor();
  if (target.pattern === '/domains/:domain') await page.getByTestId('records').waitFor();
  if (target.pattern === '/consent') await page.getByTestId('consent').waitFor();
}
