/**
 * Usage and event metrics from the stored per-day counters (migration 25, docs/metrics.md) through
 * the AgentMail SDK against a real `svc serve`, on a home whose mail was stored through the inbound
 * commit path over ten days: every series the SDK reads — daily and hourly, windows starting and
 * ending inside a day, the owner and a `message_read` key (hidden mail left out) — equals the count
 * made from the messages themselves; deleting a message over the API takes it out of its day and
 * of every later total.
 */
import t from 'tap';
import { AgentMailClient } from 'agentmail';
import { api, startSvc } from '../helpers/svc.js';
import { openHomeDb } from '../helpers/db.js';
import { commitInbound } from '../../src/mail/store.js';
import { countMetricEvents, usageSeries, METRIC_EVENT_TYPES, USAGE_TYPES, type UsageType } from '../../src/mail/metrics.js';
import { HIDDEN_LABELS, type HiddenLabel } from '../../src/mail/labels.js';
import { parseMime } from '../../workers/pool/parse.js';

const enc = encodeURIComponent;
const HOUR = 3_600_000;
const DAY = 24 * HOUR;
const INBOXES = ['north@home.example', 'south@home.example'];

type SdkPoints = Record<string, { timestamp: Date; value?: number; count?: number }[] | undefined>;
/** The SDK's answer with its dates back as the API's strings, to compare with the count from the messages. */
const plain = (res: SdkPoints) =>
  Object.fromEntries(Object.entries(res).map(([k, points]) => [k, (points ?? []).map((p) => ({ timestamp: p.timestamp.toISOString(), ...(p.value !== undefined ? { value: p.value } : { count: p.count }) }))]));

t.test('the SDK reads counter-made series equal to the counts from the messages, across days and after a delete', async (t) => {
  const first = await startSvc();
  for (const inbox of INBOXES) {
    const [username, domain] = inbox.split('@');
    t.equal((await api(first.url, 'POST', '/v0/inboxes', { token: first.ownerToken, body: { username, domain } })).status, 200);
  }
  await first.stop();
  const home = first.home;

  // Ten days of mail, a message every 47 minutes, stored as the inbound loop stores it.
  const now = Date.now();
  const template = await parseMime(new TextEncoder().encode(`From: a@example.net\r\nTo: ${INBOXES[0]}\r\nSubject: x\r\nMessage-ID: <t@example.net>\r\n\r\nbody\r\n`));
  const seeded = openHomeDb(home);
  const MESSAGES = 300;
  seeded.transaction(() => {
    for (let i = 0; i < MESSAGES; i++) {
      const at = new Date(now - 10 * DAY + i * 47 * 60_000).toISOString();
      const hidden: ('spam' | 'blocked')[] = i % 9 === 4 ? ['spam'] : i % 23 === 11 ? ['blocked'] : [];
      commitInbound(seeded, {
        inboxId: INBOXES[i % 2]!,
        parsed: {
          ...template,
          messageId: `<d${i}@example.net>`,
          inReplyTo: i >= 4 && i % 3 !== 0 ? `<d${i - 2}@example.net>` : null,
          references: i >= 4 && i % 3 !== 0 ? [`<d${i - 2}@example.net>`] : [],
          subject: `Day mail ${i}`,
          text: 'x'.repeat(50 + (i % 40)),
          date: at,
        },
        raw: new TextEncoder().encode(`Subject: Day mail ${i}\r\n\r\n${'x'.repeat(50 + (i % 40))}\r\n`),
        sourceKey: `day-${i}`,
        receivedAt: at,
        hiddenLabels: hidden,
      });
    }
  })();
  seeded.close();

  const svc = await startSvc({ home, init: false });
  t.teardown(() => svc.stop());
  const db = openHomeDb(home);
  t.teardown(() => db.close());
  const owner = new AgentMailClient({ apiKey: svc.ownerToken, baseUrl: svc.url, maxRetries: 0, timeoutInSeconds: 30 });
  const key = await api<{ api_key: string }>(svc.url, 'POST', '/v0/api-keys', { token: svc.ownerToken, body: { name: 'reader', permissions: ['message_read'] } });
  t.equal(key.status, 200);
  const reader = new AgentMailClient({ apiKey: key.body.api_key, baseUrl: svc.url, maxRetries: 0, timeoutInSeconds: 30 });

  const end = now - 7 * HOUR - 13 * 60_000;
  const windows = [
    { start: end - 10 * DAY, end, period: 86_400 },
    { start: end - 4 * DAY - 5 * HOUR, end, period: 86_400 },
    { start: end - DAY, end, period: 3600 },
    { start: end - 3 * DAY + 20 * 60_000, end: end - DAY, period: 3600 },
  ];
  const usageTypes: UsageType[] = ['message_count', 'storage_bytes', 'thread_count'];
  const compare = async (t: typeof import('tap').default, label: string) => {
    for (const w of windows) {
      const window = { startMs: w.start, endMs: w.end, periodS: w.period, limit: 1000, descending: false };
      const range = `${new Date(w.start).toISOString()}..${new Date(w.end).toISOString()} /${w.period}s`;
      for (const [who, client, excluded] of [['owner', owner, []], ['message_read key', reader, HIDDEN_LABELS]] as const) {
        const usage = await client.metrics.queryUsage({ usageTypes, start: new Date(w.start), end: new Date(w.end), period: w.period });
        const expected = usageSeries(db, INBOXES, usageTypes, window, { instanceWide: true, withDomains: who === 'owner' }, { excluded: excluded as readonly HiddenLabel[] }, 'scan');
        t.same(plain(usage as SdkPoints), expected, `${label}: ${who} usage ${range}`);
      }
      const events = await owner.inboxes.metrics.queryEvents(INBOXES[0]!, { start: new Date(w.start), end: new Date(w.end), period: w.period });
      const types = METRIC_EVENT_TYPES.filter((ty) => ty !== 'domain.verified');
      t.same(plain(events as SdkPoints), countMetricEvents(db, [INBOXES[0]!], types, window, false, 'scan'), `${label}: owner events of one inbox ${range}`);
    }
  };
  await compare(t, 'seeded');
  const usage = (await owner.metrics.queryUsage({ usageTypes, start: new Date(end - 10 * DAY), end: new Date(end), period: 86_400 })) as SdkPoints;
  t.equal(usage.message_count!.at(-1)!.value, db.prepare('SELECT count(*) AS n FROM messages WHERE timestamp < ?').pluck().get(new Date(end).toISOString()), 'the newest point is every message stored by `end`');

  // A message five days back, deleted over the API.
  const victim = `<d${Math.floor(MESSAGES / 2)}@example.net>`;
  const victimDay = Date.parse((db.prepare('SELECT timestamp FROM messages WHERE message_id = ?').pluck().get(victim) as string).slice(0, 10));
  t.equal((await api(svc.url, 'DELETE', `/v0/inboxes/${enc(INBOXES[0]!)}/messages/${enc(victim)}`, { token: svc.ownerToken })).status, 200);
  const after = (await owner.metrics.queryUsage({ usageTypes, start: new Date(end - 10 * DAY), end: new Date(end), period: 86_400 })) as SdkPoints;
  const drop = usage.message_count!.map((p, i) => p.value! - after.message_count![i]!.value!);
  t.same(
    drop,
    usage.message_count!.map((p) => (p.timestamp.getTime() >= victimDay ? 1 : 0)),
    'the delete takes one message out of its day and every later total, none before',
  );
  await compare(t, 'after the delete');
});
