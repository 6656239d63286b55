/**
 * What comes back to the relay and what it keeps: DSN and ARF parsing (pure, table-driven), the
 * durable report log (ids, paging, restart, torn lines, retention) and the outbound job store.
 */
import t from 'tap';
import fs from 'node:fs';
import path from 'node:path';
import { parseDeliveryReport } from '../../src/edge/dsn.js';
import { headerMessageId, OutboundStore, sealMime } from '../../src/edge/outbound-store.js';
import { ReportLog } from '../../src/edge/reports.js';
import { isReportLocalPart } from '../../src/edge/routing.js';
import { deriveEdgeKey, envelopeSender, parseVerpTag, taggedReturnPath, verpId, verpMacMatches, MAX_LOCAL_PART } from '../../src/edge/verp.js';
import { tempDir } from '../helpers/svc.js';

function dsn(opts: { boundary?: string; perRecipient: string[]; original?: string; wrap?: boolean; statusEncoding?: 'base64' }): Buffer {
  const b = opts.boundary ?? 'B1';
  const status = ['Reporting-MTA: dns; mx.remote.test', '', ...opts.perRecipient.flatMap((r) => [r, ''])].join('\r\n');
  const statusPart =
    opts.statusEncoding === 'base64'
      ? ['Content-Type: message/delivery-status', 'Content-Transfer-Encoding: base64', '', Buffer.from(status).toString('base64')]
      : ['Content-Type: message/delivery-status', '', status];
  const report = [
    `Content-Type: multipart/report; report-type="delivery-status"; boundary="${b}"`,
    '',
    `--${b}`,
    'Content-Type: text/plain',
    '',
    'Your message could not be delivered.',
    `--${b}`,
    ...statusPart,
    `--${b}`,
    'Content-Type: text/rfc822-headers',
    '',
    opts.original ?? 'Message-ID: <orig-1@home.test>\r\nSubject: hi',
    `--${b}--`,
    '',
  ].join('\r\n');
  const top = ['From: MAILER-DAEMON@remote.test', 'To: svc-bounce+ref1@home.test', 'Subject: Undelivered Mail', 'MIME-Version: 1.0'];
  if (!opts.wrap) return Buffer.from([...top, report].join('\r\n'));
  return Buffer.from([...top, 'Content-Type: multipart/mixed; boundary="OUTER"', '', '--OUTER', report, '--OUTER--', ''].join('\r\n'));
}

const RCPT_FAILED = 'Final-Recipient: rfc822; carol@remote.test\r\nAction: failed\r\nStatus: 5.1.1\r\nDiagnostic-Code: smtp; 550 5.1.1 <carol@remote.test>: Recipient address rejected';

t.test('a DSN with Action: failed reads as a failed recipient with the SMTP code and diagnostic', async (t) => {
  const parsed = parseDeliveryReport(dsn({ perRecipient: [RCPT_FAILED] }));
  t.same(parsed, {
    kind: 'dsn',
    originalMessageId: '<orig-1@home.test>',
    returnPaths: [],
    recipients: [{ recipient: 'carol@remote.test', action: 'failed', status: '5.1.1', code: 550, message: '550 5.1.1 <carol@remote.test>: Recipient address rejected' }],
  });
});

t.test('DSN fields: table of per-recipient groups', async (t) => {
  const cases: { name: string; group: string; want: Record<string, unknown> }[] = [
    { name: 'delayed, no diagnostic → code from Status class', group: 'Final-Recipient: rfc822;dave@remote.test\r\nAction: delayed\r\nStatus: 4.4.7', want: { recipient: 'dave@remote.test', action: 'delayed', status: '4.4.7', code: 450, message: 'Status 4.4.7' } },
    { name: 'Original-Recipient when Final-Recipient is missing', group: 'Original-Recipient: rfc822;<eve@remote.test>\r\nAction: failed\r\nStatus: 5.0.0', want: { recipient: 'eve@remote.test', action: 'failed', code: 550 } },
    { name: 'folded Diagnostic-Code', group: 'Final-Recipient: rfc822; fred@remote.test\r\nAction: failed\r\nStatus: 5.2.2\r\nDiagnostic-Code: smtp; 552 5.2.2 Mailbox\r\n full', want: { code: 552, message: '552 5.2.2 Mailbox full' } },
    { name: 'Action with a comment', group: 'Final-Recipient: rfc822; g@remote.test\r\nAction: failed (bad)\r\nStatus: 5.1.1', want: { action: 'failed' } },
  ];
  for (const c of cases) {
    const parsed = parseDeliveryReport(dsn({ perRecipient: [c.group] }));
    t.equal(parsed?.kind, 'dsn', c.name);
    if (parsed?.kind === 'dsn') t.match(parsed.recipients[0], c.want, c.name);
  }
});

t.test('a DSN nested in multipart/mixed, with a base64 status part, is still read', async (t) => {
  const parsed = parseDeliveryReport(dsn({ perRecipient: [RCPT_FAILED], wrap: true, statusEncoding: 'base64' }));
  t.equal(parsed?.kind, 'dsn');
  if (parsed?.kind === 'dsn') t.equal(parsed.recipients[0].code, 550);
});

t.test('an ARF report reads as a complaint with Original-Rcpt-To and the original Message-ID', async (t) => {
  const raw = Buffer.from(
    [
      'From: fbl@isp.test',
      'To: svc-feedback@home.test',
      'MIME-Version: 1.0',
      'Content-Type: multipart/report; report-type=feedback-report; boundary="arf"',
      '',
      '--arf',
      'Content-Type: text/plain',
      '',
      'This is an abuse report.',
      '--arf',
      'Content-Type: message/feedback-report',
      '',
      'Feedback-Type: abuse',
      'User-Agent: isp-fbl/1.0',
      'Version: 1',
      'Original-Rcpt-To: <carol@isp.test>',
      'Original-Mail-From: <svc-bounce+0123456789abcdef-0123456789abcdef0123456789abcdef@home.test>',
      '',
      '--arf',
      'Content-Type: message/rfc822',
      '',
      'Return-Path: <svc-bounce+fedcba9876543210-0123456789abcdef0123456789abcdef@home.test>',
      'From: bob@home.test',
      'To: carol@isp.test, "Dan" <dan@isp.test>',
      'Message-ID: <sent-42@home.test>',
      'Subject: hello',
      '',
      'redacted',
      '--arf--',
      '',
    ].join('\r\n'),
  );
  const returnPaths = ['svc-bounce+0123456789abcdef-0123456789abcdef0123456789abcdef@home.test', 'svc-bounce+fedcba9876543210-0123456789abcdef0123456789abcdef@home.test'];
  t.same(parseDeliveryReport(raw), { kind: 'arf', feedbackType: 'abuse', recipients: ['carol@isp.test'], recipientsFrom: 'original-rcpt-to', originalMessageId: '<sent-42@home.test>', returnPaths }, 'Original-Mail-From and the original Return-Path are where the tag may be');
  const noRcpt = Buffer.from(raw.toString().replace('Original-Rcpt-To: <carol@isp.test>\r\n', ''));
  t.same(parseDeliveryReport(noRcpt), { kind: 'arf', feedbackType: 'abuse', recipients: ['carol@isp.test', 'dan@isp.test'], recipientsFrom: 'original-headers', originalMessageId: '<sent-42@home.test>', returnPaths }, 'without Original-Rcpt-To the original To/Cc are used');
});

t.test('anything that is not a DSN or ARF report reads as null', async (t) => {
  const cases: [string, string][] = [
    ['plain text', 'From: a@b.test\r\nSubject: hi\r\n\r\nhello\r\n'],
    ['multipart/mixed without a report', 'Content-Type: multipart/mixed; boundary=x\r\n\r\n--x\r\nContent-Type: text/plain\r\n\r\nhi\r\n--x--\r\n'],
    ['report without its status part', 'Content-Type: multipart/report; report-type=delivery-status; boundary=x\r\n\r\n--x\r\nContent-Type: text/plain\r\n\r\nhi\r\n--x--\r\n'],
    ['report with no recipient groups', 'Content-Type: multipart/report; report-type=delivery-status; boundary=x\r\n\r\n--x\r\nContent-Type: message/delivery-status\r\n\r\nReporting-MTA: dns; a\r\n--x--\r\n'],
    ['boundary never appears', 'Content-Type: multipart/report; report-type=delivery-status; boundary=x\r\n\r\nnothing\r\n'],
    ['unknown report type', 'Content-Type: multipart/report; report-type=disposition-notification; boundary=x\r\n\r\n--x\r\nContent-Type: message/disposition-notification\r\n\r\nDisposition: manual-action/MDN-sent-manually; displayed\r\n--x--\r\n'],
    ['empty', ''],
  ];
  for (const [name, text] of cases) t.equal(parseDeliveryReport(Buffer.from(text)), null, name);
});

t.test('report addresses: svc-bounce+<tag> and svc-feedback are report local parts; a tag verifies only for its ref and key', async (t) => {
  t.ok(isReportLocalPart('svc-bounce+abc'));
  t.ok(isReportLocalPart('SVC-Feedback'));
  t.notOk(isReportLocalPart('svc-bounce+'));
  t.notOk(isReportLocalPart('svc-bouncer'));
  const key = deriveEdgeKey('edge_' + 'k'.repeat(43), 'verp-tag');
  const ref = 'R'.repeat(128);
  const address = taggedReturnPath(key, ref, 'home.test');
  t.ok(address.indexOf('@') <= MAX_LOCAL_PART, 'the local part fits 64 octets even for the longest ref');
  t.equal(envelopeSender(key, ref, 'svc-bounce+whatever@Home.test'), taggedReturnPath(key, ref, 'Home.test'), 'the home\'s return path gets the tag');
  t.equal(envelopeSender(key, ref, 'alice@home.test'), 'alice@home.test', 'other senders are left alone');
  t.equal(envelopeSender(key, ref, ''), '', 'the null sender stays null');
  const tag = parseVerpTag(address.toUpperCase());
  t.equal(tag?.id, verpId(ref), 'read in any case');
  t.ok(verpMacMatches(key, ref, tag!.mac));
  t.notOk(verpMacMatches(key, 'other', tag!.mac), 'bound to the ref');
  t.notOk(verpMacMatches(deriveEdgeKey('edge_' + 'z'.repeat(43), 'verp-tag'), ref, tag!.mac), 'bound to the key');
  t.notOk(verpMacMatches(key, ref, tag!.mac.slice(0, -1)), 'a short tag fails');
  t.equal(parseVerpTag('svc-bounce+Msg_1.2-x@home.test'), null, 'an untagged ref is no tag');
  t.equal(parseVerpTag('bob@home.test'), null);
});

t.test('Message-ID is read from the header block only, unfolded', async (t) => {
  t.equal(headerMessageId(Buffer.from('Subject: x\r\nMessage-ID:\r\n <a.b@c.test>\r\n\r\nMessage-ID: <body@x>\r\n')), '<a.b@c.test>');
  t.equal(headerMessageId(Buffer.from('Subject: x\r\n\r\nMessage-ID: <body@x>\r\n')), null);
});

// ---------------------------------------------------------------------------------------------
// The report log

t.test('reports get increasing ids, page with after/limit, and next equals after when nothing is new', async (t) => {
  const log = new ReportLog(tempDir('svc-reports-'));
  log.open();
  t.same(log.page(null, 10), { events: [], next: '' });
  const written = await log.append([
    { ref: 'r1', type: 'delivered', recipient: 'a@x.test', code: 250, message: '250 ok' },
    { ref: 'r1', type: 'bounced', recipient: 'b@x.test', code: 550, message: 'x'.repeat(700) },
    { ref: 'r2', type: 'deferred', recipient: 'c@y.test' },
  ]);
  t.same(written.map((r) => r.id), ['0000000000000001', '0000000000000002', '0000000000000003']);
  t.equal(written[1].message?.length, 500, 'messages are cut to 500 characters');
  t.notOk('code' in written[2], 'absent code is omitted');
  const first = log.page(null, 2);
  t.same(first.events.map((e) => e.recipient), ['a@x.test', 'b@x.test']);
  t.equal(first.next, '0000000000000002');
  const second = log.page(first.next, 2);
  t.same(second.events.map((e) => e.recipient), ['c@y.test']);
  t.same(log.page(second.next, 2), { events: [], next: second.next });
});

t.test('the log survives a restart, cuts a torn last line, and keeps counting up', async (t) => {
  const dir = tempDir('svc-reports-');
  const log = new ReportLog(dir);
  log.open();
  await log.append([{ ref: 'r1', type: 'delivered', recipient: 'a@x.test' }]);
  await log.append([{ ref: 'r1', type: 'delivered', recipient: 'b@x.test' }]);
  const [segment] = fs.readdirSync(path.join(dir, 'reports'));
  fs.appendFileSync(path.join(dir, 'reports', segment), '{"id":"0000000000000003","ref":"r');
  const again = new ReportLog(dir);
  again.open();
  t.same(again.page(null, 10).events.map((e) => e.id), ['0000000000000001', '0000000000000002']);
  const [next] = await again.append([{ ref: 'r2', type: 'bounced', recipient: 'c@x.test' }]);
  t.equal(next.id, '0000000000000003');
  const third = new ReportLog(dir);
  third.open();
  t.same(third.page(null, 10).events.map((e) => e.recipient), ['a@x.test', 'b@x.test', 'c@x.test'], 'the torn line is gone, the new one is whole');
});

t.test('segments past the retention are pruned, but ids never go back', async (t) => {
  const dir = tempDir('svc-reports-');
  let now = Date.parse('2025-01-01T00:00:00Z');
  const log = new ReportLog(dir, () => now);
  log.open();
  await log.append([{ ref: 'old', type: 'delivered', recipient: 'a@x.test' }]);
  now += 2 * 86_400_000;
  await log.append([{ ref: 'newer', type: 'delivered', recipient: 'b@x.test' }]);
  t.equal(fs.readdirSync(path.join(dir, 'reports')).length, 2, 'a new segment each day');
  now += 6 * 86_400_000;
  await log.prune();
  t.same(log.page(null, 10).events.map((e) => e.ref), ['newer'], 'the 8-day-old segment is gone');
  now += 30 * 86_400_000;
  await log.prune();
  t.equal(log.page(null, 10).events.length, 1, 'the newest segment is always kept');
  const reopened = new ReportLog(dir, () => now);
  reopened.open();
  const [next] = await reopened.append([{ ref: 'later', type: 'delivered', recipient: 'c@x.test' }]);
  t.equal(next.id, '0000000000000003');
});

// ---------------------------------------------------------------------------------------------
// The job store

const MIME_KEY = deriveEdgeKey('edge_' + 'm'.repeat(43), 'outbound-mime');

t.test('queued messages are sealed on disk: no plaintext, bound to key and ref; an old plaintext .eml is sealed at start', async (t) => {
  const dir = tempDir('svc-outbound-');
  const store = new OutboundStore(dir, MIME_KEY);
  store.open();
  const raw = Buffer.from('Subject: Merger plans\r\n\r\nThe secret body.\r\n');
  await store.create({ ref: 'sealed-1', mailFrom: '', recipients: ['x@remote.test'], raw });
  const [file] = fs.readdirSync(path.join(dir, 'mime'));
  t.match(file, /\.sealed$/);
  const onDisk = fs.readFileSync(path.join(dir, 'mime', file));
  t.equal(onDisk.includes('Merger plans'), false, 'the subject is not on disk');
  t.equal(onDisk.includes('secret body'), false, 'the body is not on disk');
  t.same(await store.readMime('sealed-1'), raw, 'the edge opens its own queue');
  const otherKey = new OutboundStore(dir, deriveEdgeKey('edge_' + 'n'.repeat(43), 'outbound-mime'));
  otherKey.open();
  await t.rejects(otherKey.readMime('sealed-1'), { name: 'SealedMimeUnreadable' }, 'another token\'s key does not open it');

  // An edge from before sealing left a plaintext .eml for an unfinished job.
  await store.create({ ref: 'legacy-1', mailFrom: '', recipients: ['x@remote.test'], raw });
  const name = fs.readdirSync(path.join(dir, 'mime')).find((n) => n !== file)!;
  const stem = name.slice(0, -'.sealed'.length);
  fs.rmSync(path.join(dir, 'mime', name));
  fs.writeFileSync(path.join(dir, 'mime', `${stem}.eml`), raw);
  const upgraded = new OutboundStore(dir, MIME_KEY);
  upgraded.open();
  t.same(fs.readdirSync(path.join(dir, 'mime')).sort(), [file, `${stem}.sealed`].sort(), 'the .eml is gone, sealed in its place');
  t.equal(fs.readFileSync(path.join(dir, 'mime', `${stem}.sealed`)).includes('Merger plans'), false);
  t.same(await upgraded.readMime('legacy-1'), raw);
  t.throws(() => sealMime(Buffer.alloc(3), 'r', raw), 'a wrong-sized key is refused');
});

t.test('a job is written durably, is idempotent on its ref, and is found again after a restart', async (t) => {
  const dir = tempDir('svc-outbound-');
  const store = new OutboundStore(dir, MIME_KEY);
  store.open();
  const raw = Buffer.from('Message-ID: <m1@home.test>\r\nSubject: x\r\n\r\nbody\r\n');
  const [a, b] = await Promise.all([
    store.create({ ref: '..', mailFrom: 'svc-bounce+..@home.test', recipients: ['x@remote.test'], raw }),
    store.create({ ref: '..', mailFrom: 'other@home.test', recipients: ['y@remote.test'], raw }),
  ]);
  t.equal(a.created, true);
  t.equal(b.created, false, 'a concurrent repeat waits for the first and creates nothing');
  t.equal(b.job.mail_from, 'svc-bounce+..@home.test');
  t.equal(fs.readdirSync(path.join(dir, 'jobs')).length, 1);
  t.equal(fs.readdirSync(path.join(dir, 'mime')).length, 1);
  const again = new OutboundStore(dir, MIME_KEY);
  again.open();
  t.equal(again.get('..')?.recipients[0].address, 'x@remote.test');
  t.same(again.byVerpId(verpId('..')).map((j) => j.ref), ['..'], 'found by its VERP id');
  t.same(await again.readMime('..'), raw);
});

t.test('start-up removes temp files, MIME without a record, and MIME of finished jobs', async (t) => {
  const dir = tempDir('svc-outbound-');
  const store = new OutboundStore(dir, MIME_KEY);
  store.open();
  const raw = Buffer.from('Subject: x\r\n\r\nbody\r\n');
  const { job } = await store.create({ ref: 'done-1', mailFrom: '', recipients: ['x@remote.test'], raw });
  await store.create({ ref: 'open-1', mailFrom: '', recipients: ['x@remote.test'], raw });
  job.status = 'done';
  job.finished_at = new Date().toISOString();
  await store.save(job);
  fs.writeFileSync(path.join(dir, 'mime', 'f'.repeat(64) + '.sealed'), 'orphan');
  fs.writeFileSync(path.join(dir, 'mime', 'e'.repeat(64) + '.eml'), 'orphan');
  fs.writeFileSync(path.join(dir, 'jobs', 'x.json.tmp'), '{');
  const again = new OutboundStore(dir, MIME_KEY);
  again.open();
  t.equal(fs.readdirSync(path.join(dir, 'mime')).length, 1, 'only the unfinished job keeps its message');
  t.same(await again.readMime('open-1'), raw);
  t.same(fs.readdirSync(path.join(dir, 'jobs')).filter((n) => n.endsWith('.tmp')), []);
});
