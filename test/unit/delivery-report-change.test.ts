/**
 * The delivery-report decision (reportChange, src/mail/delivery-reports.ts): one case per row of
 * the table in docs/outbound.md "Delivery reports", plus the rule under it (a report about an
 * address the message was not sent to is skipped). Pure: no database.
 */
import t from 'tap';
import { reportChange, type DeliveryReport, type ReportChange } from '../../src/mail/delivery-reports.js';

const SENT_TO = ['bob@example.org', 'Carol@Example.org'];

interface Case {
  row: string;
  report: Pick<DeliveryReport, 'type' | 'recipient' | 'code'>;
  change: ReportChange | null;
}

const CASES: Case[] = [
  {
    row: '`delivered`: + delivered (− deferred), message.delivered',
    report: { type: 'delivered', recipient: 'bob@example.org' },
    change: { status: 'delivered', reason: null, addLabel: 'delivered', removeLabels: ['deferred'], event: { eventType: 'message.delivered', payloadKey: 'delivery', payload: { recipients: ['bob@example.org'] } } },
  },
  { row: '`deferred`: + deferred, no event (rule 6)', report: { type: 'deferred', recipient: 'bob@example.org', code: 451 }, change: { status: 'deferred', reason: null, addLabel: 'deferred', removeLabels: [], event: null } },
  {
    row: '`bounced` with a server code: + bounced, message.bounced with the SMTP code',
    report: { type: 'bounced', recipient: 'bob@example.org', code: 550 },
    change: {
      status: 'bounced',
      reason: null,
      addLabel: 'bounced',
      removeLabels: ['deferred'],
      event: { eventType: 'message.bounced', payloadKey: 'bounce', payload: { type: 'unknown', sub_type: 'unknown', recipients: [{ address: 'bob@example.org', status: '550' }] } },
    },
  },
  {
    row: '`bounced` without a code: + failed, reason delivery_failed, message.failed',
    report: { type: 'bounced', recipient: 'bob@example.org' },
    change: { status: 'failed', reason: 'delivery_failed', addLabel: 'failed', removeLabels: ['deferred'], event: { eventType: 'message.failed', payloadKey: 'failure', payload: { reason: 'delivery_failed' } } },
  },
  {
    row: '`complained`: + complained, message.complained',
    report: { type: 'complained', recipient: 'bob@example.org' },
    change: { status: 'complained', reason: null, addLabel: 'complained', removeLabels: [], event: { eventType: 'message.complained', payloadKey: 'complaint', payload: { type: 'unknown', sub_type: 'unknown', recipients: ['bob@example.org'] } } },
  },
  { row: 'a report about an address the message was not sent to is skipped', report: { type: 'delivered', recipient: 'mallory@example.org' }, change: null },
  { row: 'a bounce about an address the message was not sent to is skipped', report: { type: 'bounced', recipient: 'mallory@example.org', code: 550 }, change: null },
];

for (const c of CASES) t.test(c.row, async (t) => t.same(reportChange(c.report, SENT_TO), c.change));

t.test('recipients match without regard to case, and the report names the address as the edge gave it', async (t) => {
  const change = reportChange({ type: 'delivered', recipient: 'carol@example.ORG' }, SENT_TO);
  t.same(change?.event?.payload, { recipients: ['carol@example.ORG'] });
});

t.test('no recipients (an unreadable outbox row): nothing applies', async (t) => {
  for (const type of ['delivered', 'deferred', 'bounced', 'complained'] as const) t.equal(reportChange({ type, recipient: 'bob@example.org', code: 550 }, []), null, type);
});

t.test('a report type this home does not know changes nothing', async (t) => {
  t.equal(reportChange({ type: 'opened' as DeliveryReport['type'], recipient: 'bob@example.org' }, SENT_TO), null);
});
