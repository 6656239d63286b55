/**
 * The domain state table (src/domains/states.ts), one case per row of the table in
 * docs/domains.md "State machine", every row of the code table reached by a case, and the
 * owner's calls answered in every status.
 */
import t from 'tap';
import * as serialization from 'agentmail/serialization';
import { DOMAIN_STATUSES, DOMAIN_TRANSITIONS, RECORD_STATES, domainTransition, sdkDomainStatus, sdkRecordStatus, type DomainStatus, type DomainTransition, type DomainTrigger } from '../../src/domains/states.js';

interface Case {
  row: string;
  from: readonly DomainStatus[];
  trigger: DomainTrigger;
  to: DomainTransition['to'];
  resetsVerification?: boolean;
  event?: 'domain.verified';
}

const CASES: Case[] = [
  { row: 'apply while provisioning, verifying or verified: idempotent', from: ['provisioning', 'verifying', 'verified'], trigger: 'apply', to: 'unchanged' },
  { row: 'apply: provision (again)', from: ['pending', 'failed', 'tearing_down', 'torn_down'], trigger: 'apply', to: 'provisioning', resetsVerification: true },
  { row: 'verify while provisioning: it starts by itself', from: ['provisioning'], trigger: 'verify', to: 'unchanged' },
  { row: 'verify a provisioned domain: a new check from scratch', from: ['verifying', 'verified', 'failed'], trigger: 'verify', to: 'verifying', resetsVerification: true },
  { row: 'verify a domain never applied or torn down: provision it, as apply does', from: ['pending', 'tearing_down', 'torn_down'], trigger: 'verify', to: 'provisioning', resetsVerification: true },
  { row: 'teardown again: idempotent', from: ['tearing_down', 'torn_down'], trigger: 'teardown', to: 'unchanged' },
  { row: 'teardown', from: ['pending', 'provisioning', 'verifying', 'verified', 'failed'], trigger: 'teardown', to: 'tearing_down', resetsVerification: true },
  { row: 'delete when nothing is provisioned', from: ['pending', 'torn_down'], trigger: 'delete', to: 'gone' },
  { row: 'delete anything provisioned: 409, tear it down first', from: ['provisioning', 'verifying', 'verified', 'failed', 'tearing_down'], trigger: 'delete', to: { refused: 'conflict' } },
  { row: 'the edge accepted a routing with it', from: ['provisioning'], trigger: 'routed', to: 'verifying' },
  { row: 'the edge accepted a routing without it (or there is no edge)', from: ['tearing_down'], trigger: 'unrouted', to: 'torn_down' },
  { row: 'a DNS record is invalid', from: ['verifying'], trigger: 'dns_invalid', to: 'failed' },
  { row: 'the self-test came back', from: ['verifying'], trigger: 'selftest_back', to: 'verified', event: 'domain.verified' },
  { row: 'the self-test did not come back within 10 minutes', from: ['verifying'], trigger: 'selftest_timeout', to: 'failed' },
  { row: 'the transport refused the self-test', from: ['verifying'], trigger: 'selftest_refused', to: 'failed' },
];

const reached = new Set<DomainTransition>();

for (const c of CASES) {
  t.test(c.row, async (t) => {
    for (const from of c.from) {
      const step = domainTransition(from, c.trigger);
      if (!step) return void t.fail(`no row for ${c.trigger} from ${from}`);
      reached.add(step);
      t.same(step.to, c.to, `${from}: to`);
      t.equal(step.resetsVerification === true, c.resetsVerification === true, `${from}: resets verification`);
      t.equal(step.event, c.event, `${from}: event`);
    }
  });
}

t.test('every row of the code table is reached by a docs case', async (t) => {
  for (const row of DOMAIN_TRANSITIONS) t.ok(reached.has(row), `${row.trigger} from ${row.from.join('/')}`);
});

t.test('the owner calls have a row in every status', async (t) => {
  for (const from of DOMAIN_STATUSES) for (const trigger of ['apply', 'verify', 'teardown', 'delete'] as const) t.ok(domainTransition(from, trigger), `${trigger} from ${from}`);
});

t.test('only the self-test coming back makes a domain verified', async (t) => {
  for (const row of DOMAIN_TRANSITIONS) if (row.to === 'verified') t.equal(row.trigger, 'selftest_back');
});

t.test('the loop findings do not apply outside their status', async (t) => {
  t.equal(domainTransition('verified', 'routed'), null, 'a verified domain stays verified when routed again');
  t.equal(domainTransition('torn_down', 'unrouted'), null);
  t.equal(domainTransition('failed', 'selftest_back'), null, 'a self-test from an earlier check does not verify a failed domain');
});

/** docs/domains.md "Statuses for the AgentMail SDK", row by row. */
const SDK_STATUS_ROWS: [DomainStatus, boolean, string][] = [
  ['pending', false, 'NOT_STARTED'],
  ['provisioning', false, 'PENDING'],
  ['verifying', false, 'VERIFYING'],
  ['verified', false, 'VERIFIED'],
  ['failed', true, 'INVALID'],
  ['failed', false, 'FAILED'],
  ['tearing_down', false, 'NOT_STARTED'],
  ['torn_down', false, 'NOT_STARTED'],
];

t.test("every state maps to a value of the SDK's VerificationStatus, as the docs table says", async (t) => {
  const strict = { allowUnrecognizedEnumValues: false, skipValidation: false };
  for (const [state, invalidRecord, sdk] of SDK_STATUS_ROWS) {
    t.equal(sdkDomainStatus(state, invalidRecord), sdk, `${state}${invalidRecord ? ' with an invalid record' : ''}`);
    t.ok(serialization.Status.parse(sdk, strict).ok, `${sdk} parses with the SDK's enum`);
  }
  for (const state of DOMAIN_STATUSES) t.ok(SDK_STATUS_ROWS.some(([s]) => s === state), `${state} has a row`);
  for (const state of RECORD_STATES) for (const missing of [false, true]) t.ok(serialization.RecordStatus.parse(sdkRecordStatus(state, missing), strict).ok, `record ${state}`);
  t.same([sdkRecordStatus('pending', false), sdkRecordStatus('valid', false), sdkRecordStatus('invalid', false), sdkRecordStatus('invalid', true)], ['MISSING', 'VALID', 'INVALID', 'MISSING']);
});
