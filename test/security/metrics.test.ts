/**
 * The attacker's view of usage metrics (issue 20 §5, docs/metrics.md): another inbox's id in any
 * spelling is 404 before permissions; `message_read` is required (403); hidden variants need their
 * label permission and `domain.verified` the owner; the instance-wide forms count only the key's
 * inboxes, also on the days a daily series reads from the day roll-ups; huge ranges, bad
 * periods, bad dates and unknown types are a 400 with a fix; bounds hold.
 */
import t from 'tap';
import { api, startSvc } from '../helpers/svc.js';
import { seedMail, simpleMail } from '../helpers/mail.js';

const enc = encodeURIComponent;
type Body = Record<string, { timestamp: string; count?: number; value?: number }[]> & { code?: string; message?: string; fix?: string };
const sum = (b: Body, type: string) => (b[type] ?? []).reduce((n, x) => n + (x.count ?? 0), 0);

t.test('metrics respect scope, permissions and bounds', async (t) => {
  const svc = await startSvc();
  t.teardown(() => svc.stop());
  const owner = svc.ownerToken;
  for (const username of ['mine', 'theirs']) await api(svc.url, 'POST', '/v0/inboxes', { token: owner, body: { username, domain: 'metsec.test' } });
  const mine = 'mine@metsec.test';
  const theirs = 'theirs@metsec.test';
  for (let i = 0; i < 3; i++) await seedMail(svc.home, simpleMail({ from: 'x@elsewhere.test', to: theirs, subject: `theirs ${i}` }), { inboxId: theirs });
  await seedMail(svc.home, simpleMail({ from: 'x@elsewhere.test', to: mine, subject: 'mine' }), { inboxId: mine });
  await seedMail(svc.home, simpleMail({ from: 'x@elsewhere.test', to: mine, subject: 'spam' }), { inboxId: mine, hiddenLabels: ['spam'] });
  const newKey = async (permissions: string[]) =>
    (await api<{ api_key: string }>(svc.url, 'POST', '/v0/api-keys', { token: owner, body: { name: 'k', inbox_ids: [mine], permissions } })).body.api_key;
  const reader = await newKey(['message_read']);
  const spamReader = await newKey(['message_read', 'label_spam_read']);
  const noRead = await newKey(['inbox_read', 'draft_read']);
  const get = (path: string, token: string) => api<Body>(svc.url, 'GET', path, { token });

  await t.test('another inbox is 404 before any permission check, in every spelling', async (t) => {
    for (const inbox of [theirs, 'THEIRS@metsec.test', ' theirs@metsec.test', 'Theirs@MetSec.Test', 'nobody@metsec.test']) {
      for (const kind of ['events', 'usage', 'counts']) {
        for (const token of [reader, noRead]) {
          const res = await get(`/v0/inboxes/${enc(inbox)}/metrics/${kind}`, token);
          t.equal(res.status, 404, `${kind} ${inbox}`);
          t.equal(res.body.code, 'not_found');
          t.notOk(res.text.includes('theirs 0'), 'nothing of the other inbox');
        }
      }
    }
  });

  await t.test('message_read is required (403), in both forms', async (t) => {
    for (const path of [`/v0/inboxes/${enc(mine)}/metrics/events`, '/v0/metrics/events', `/v0/inboxes/${enc(mine)}/metrics/usage`, '/v0/metrics/usage', '/v0/metrics/counts']) {
      const res = await get(path, noRead);
      t.equal(res.status, 403, path);
      t.equal(res.body.code, 'missing_permission');
      t.ok(res.body.fix, 'with a fix');
    }
  });

  await t.test('the instance-wide forms count only the key\'s inboxes', async (t) => {
    const ownerView = await get('/v0/metrics/events', owner);
    t.equal(sum(ownerView.body, 'message.received'), 4, 'the owner sees every inbox (the spam one is its own variant)');
    t.equal(sum(ownerView.body, 'message.received.spam'), 1);
    const agentView = await get('/v0/metrics/events', reader);
    t.equal(agentView.status, 200);
    t.equal(sum(agentView.body, 'message.received'), 1, 'only mine@');
    t.notOk('message.received.spam' in agentView.body, 'no hidden variant without its label permission');
    t.notOk('domain.verified' in agentView.body);
    const usage = await get('/v0/metrics/usage?usage_types=message_count&usage_types=inbox_count', reader);
    t.equal(usage.body.message_count!.at(-1)!.value, 1, 'mine@ holds 2 messages, one of them spam the key cannot read');
    t.equal(usage.body.inbox_count!.at(-1)!.value, 1);
    const spamUsage = await get('/v0/metrics/usage?usage_types=message_count', spamReader);
    t.equal(spamUsage.body.message_count!.at(-1)!.value, 2, 'with label_spam_read the spam counts');
    const counts = await get('/v0/metrics/counts', reader);
    t.same(counts.body, { unread: 1, inboxes: [{ inbox_id: mine, unread: 1 }] }, 'no draft counts without draft_read; spam is not counted as unread');
  });

  await t.test('hidden variants need label_*_read; domain.verified is the owner\'s', async (t) => {
    const spam = await get('/v0/metrics/events?event_types=message.received.spam', reader);
    t.equal(spam.status, 403);
    t.equal(spam.body.code, 'missing_permission');
    const allowed = await get(`/v0/inboxes/${enc(mine)}/metrics/events?event_types=${enc('["message.received.spam"]')}`, spamReader);
    t.equal(allowed.status, 200);
    t.equal(sum(allowed.body, 'message.received.spam'), 1);
    const domains = await get('/v0/metrics/events?event_types=domain.verified', reader);
    t.equal(domains.status, 403);
    t.equal(domains.body.code, 'missing_permission');
  });

  await t.test('usage never reveals hidden mail the key cannot read: spam, blocked, unauthenticated and trash leave every series unchanged', async (t) => {
    await api(svc.url, 'POST', '/v0/inboxes', { token: owner, body: { username: 'hush', domain: 'metsec.test' } });
    const hush = 'hush@metsec.test';
    const hushKey = async (permissions: string[]) =>
      (await api<{ api_key: string }>(svc.url, 'POST', '/v0/api-keys', { token: owner, body: { name: 'h', inbox_ids: [hush], permissions } })).body.api_key;
    const hushReader = await hushKey(['message_read']);
    const hushSpamReader = await hushKey(['message_read', 'label_spam_read']);
    const since = enc(new Date(Date.now() - 10 * 60_000).toISOString());
    const types = 'usage_types=message_count&usage_types=thread_count&usage_types=storage_bytes';
    // Per minute and per second (the finest grid, where an arrival time would show), inbox and instance-wide forms.
    const paths = [`/v0/inboxes/${enc(hush)}/metrics/usage?period=60&start=${since}&${types}`, `/v0/inboxes/${enc(hush)}/metrics/usage?period=1&start=${since}&${types}`, `/v0/metrics/usage?period=60&start=${since}&${types}`];
    /** Per series: the distinct values and the current total (time moves on between calls, so the grid may shift). */
    const view = async (token: string) => {
      const out: Record<string, { values: number[]; last: number }> = {};
      for (const path of paths) {
        const res = await get(path, token);
        t.equal(res.status, 200, path);
        for (const type of ['message_count', 'thread_count', 'storage_bytes']) {
          const values = res.body[type]!.map((p) => p.value!);
          out[`${path.split('?')[0]} ${path.includes('period=1&') ? 's' : 'min'} ${type}`] = { values: [...new Set(values)].sort((a, b) => a - b), last: values.at(-1)! };
        }
      }
      return out;
    };
    await seedMail(svc.home, simpleMail({ from: 'friend@elsewhere.test', to: hush, subject: 'visible' }), { inboxId: hush });
    const before = await view(hushReader);
    t.equal(before[`/v0/inboxes/${enc(hush)}/metrics/usage min message_count`]!.last, 1);
    t.equal(before[`/v0/inboxes/${enc(hush)}/metrics/usage min thread_count`]!.last, 1);
    const visibleBytes = before[`/v0/inboxes/${enc(hush)}/metrics/usage min storage_bytes`]!.last;
    t.ok(visibleBytes > 0);

    for (const label of ['spam', 'blocked', 'unauthenticated'] as const) {
      await seedMail(svc.home, simpleMail({ from: `${label}@elsewhere.test`, to: hush, subject: `hidden ${label}`, body: 'x'.repeat(5000) }), { inboxId: hush, hiddenLabels: [label] });
    }
    const trashed = await seedMail(svc.home, simpleMail({ from: 'old@elsewhere.test', to: hush, subject: 'hidden trash', body: 'y'.repeat(5000) }), { inboxId: hush });
    const trash = await api(svc.url, 'PATCH', `/v0/inboxes/${enc(hush)}/messages/${enc(trashed.messageId)}`, { token: owner, body: { add_labels: ['trash'] } });
    t.equal(trash.status, 200, trash.text);
    const listed = await api<{ count: number }>(svc.url, 'GET', `/v0/inboxes/${enc(hush)}/messages`, { token: hushReader });
    t.equal(listed.body.count, 1, 'the message list shows the key one message');

    t.same(await view(hushReader), before, 'message_read only: every usage series is as before the hidden mail');
    const spamView = await view(hushSpamReader);
    t.equal(spamView[`/v0/inboxes/${enc(hush)}/metrics/usage min message_count`]!.last, 2, 'label_spam_read: the spam message counts');
    t.equal(spamView[`/v0/inboxes/${enc(hush)}/metrics/usage min thread_count`]!.last, 2, 'and its thread');
    t.ok(spamView[`/v0/inboxes/${enc(hush)}/metrics/usage min storage_bytes`]!.last > visibleBytes + 5000, 'and its bytes');
    t.equal(spamView['/v0/metrics/usage min message_count']!.last, 2, 'instance-wide too');
    const ownerView = await get(`/v0/inboxes/${enc(hush)}/metrics/usage?${types}`, owner);
    t.equal(ownerView.body.message_count!.at(-1)!.value, 5, 'the owner counts everything');
    t.equal(ownerView.body.thread_count!.at(-1)!.value, 5);
  });

  await t.test('bad input is a 400 validation_error with a message and a fix', async (t) => {
    const old = new Date(Date.now() - 91 * 86_400_000).toISOString();
    const queries = [
      `start=${enc(old)}`,
      'start=yesterday',
      'end=2026-13-45T99:00:00Z',
      'start=2026-01-01',
      `start=${enc(new Date(Date.now() + 3_600_000).toISOString())}`,
      `start=${enc(new Date().toISOString())}&end=${enc(new Date(Date.now() - 3_600_000).toISOString())}`,
      'period=0',
      'period=86401',
      'period=1.5',
      'period=abc',
      'limit=0',
      'limit=1001',
      'descending=maybe',
      'event_types=message.exploded',
      `event_types=${enc('["message.sent","nope"]')}`,
      `event_types=${'x'.repeat(600)}`,
      Array.from({ length: 21 }, () => 'event_types=message.sent').join('&'),
      'bogus=1',
    ];
    for (const query of queries) {
      const res = await get(`/v0/inboxes/${enc(mine)}/metrics/events?${query}`, reader);
      t.equal(res.status, 400, query.slice(0, 60));
      t.equal(res.body.code, 'validation_error');
      t.ok(res.body.message && res.body.fix, `message and fix: ${res.body.message}`);
    }
    for (const query of ['usage_types=pods', `period=1&start=${enc(new Date(Date.now() - 2 * 86_400_000).toISOString())}`, `start=${enc(old)}`]) {
      const res = await get(`/v0/metrics/usage?${query}`, reader);
      t.equal(res.status, 400, query);
      t.equal(res.body.code, 'validation_error');
      t.ok(res.body.fix);
    }
    const huge = await get(`/v0/metrics/usage?period=60&start=${enc(new Date(Date.now() - 30 * 86_400_000).toISOString())}`, reader);
    t.match(huge.body.fix, /larger `period`/, 'the fix names a period that fits');
  });

  await t.test('bounds hold: the widest window answers, a future end is clamped, a 1-second series is capped by limit', async (t) => {
    const start = enc(new Date(Date.now() - 90 * 86_400_000 + 60_000).toISOString());
    const wide = await get(`/v0/metrics/usage?start=${start}&period=86400`, owner);
    t.equal(wide.status, 200);
    t.ok(wide.body.message_count!.length <= 91);
    const future = await get(`/v0/metrics/events?end=${enc(new Date(Date.now() + 86_400_000).toISOString())}&period=1`, owner);
    t.equal(future.status, 200);
    for (const b of future.body['message.received'] ?? []) t.ok(Date.parse(b.timestamp) <= Date.now(), 'no future buckets');
    const capped = await get(`/v0/metrics/events?period=1&limit=2&event_types=message.received`, owner);
    t.ok(capped.body['message.received']!.length <= 2);
  });

  await t.test('daily series, read from the day roll-ups, count only the key\'s inboxes on every day', async (t) => {
    // Older mail in whole UTC days (migration 39's roll-ups answer them): the other inbox on days of its own and on mine's day.
    const day = 86_400_000;
    const midnight = Math.floor(Date.now() / day) * day;
    const at = (daysAgo: number, hour: number) => new Date(midnight - daysAgo * day + hour * 3_600_000).toISOString();
    for (const [daysAgo, hour] of [[5, 3], [5, 20], [12, 9], [30, 0]] as const) {
      await seedMail(svc.home, simpleMail({ from: 'x@elsewhere.test', to: theirs, subject: `theirs old ${daysAgo}` }), { inboxId: theirs, receivedAt: at(daysAgo, hour) });
    }
    await seedMail(svc.home, simpleMail({ from: 'x@elsewhere.test', to: mine, subject: 'mine old' }), { inboxId: mine, receivedAt: at(12, 15) });
    const start = enc(new Date(Date.now() - 89 * day).toISOString());
    const mineDay = new Date(midnight - 12 * day).toISOString();
    for (const base of ['/v0/metrics', `/v0/inboxes/${enc(mine)}/metrics`]) {
      const events = await get(`${base}/events?period=86400&start=${start}&event_types=message.received`, reader);
      t.equal(events.status, 200, base);
      t.same(
        events.body['message.received']!.filter((b) => Date.parse(b.timestamp) < midnight),
        [{ timestamp: mineDay, count: 1 }],
        `${base}: before today, only mine's old message, on its day`,
      );
      const usage = await get(`${base}/usage?period=86400&start=${start}&usage_types=message_count&usage_types=thread_count`, reader);
      t.equal(usage.status, 200);
      for (const type of ['message_count', 'thread_count']) {
        const values = usage.body[type]!.map((p) => p.value);
        t.same([...new Set(values)], [0, 1, 2], `${base} ${type}: 0, then 1 from mine's old day, then 2 with today's (the spam is not readable)`);
        t.equal(usage.body[type]!.find((p) => p.value === 1)!.timestamp, mineDay, `${base} ${type}: the step is on mine's day`);
      }
    }
    const ownerEvents = await get(`/v0/metrics/events?period=86400&start=${start}&event_types=message.received`, owner);
    const dayOf = (daysAgo: number) => new Date(midnight - daysAgo * day).toISOString();
    t.same(
      ownerEvents.body['message.received']!.filter((b) => Date.parse(b.timestamp) < midnight),
      [{ timestamp: dayOf(30), count: 1 }, { timestamp: dayOf(12), count: 2 }, { timestamp: dayOf(5), count: 2 }],
      'the owner counts every inbox on every day',
    );
  });
});
