/** Event visibility (spec §6.2 "Visible to", §5.2): inbox scope first, then the type's permissions. */
import t from 'tap';
import { EVENT_TYPES, audienceOf, canReadEventStream, isEventVisible } from '../../src/events/visibility.js';
import type { Principal } from '../../src/auth/principal.js';

const INBOX = 'a@x.test';
const OTHER = 'b@x.test';

function agent(permissions: string[], scope: 'all' | string[] = 'all'): Principal {
  return { kind: 'api_key', id: 'key', inboxScope: scope === 'all' ? 'all' : new Set(scope), permissions: new Set(permissions), sendPolicy: 'direct' };
}
const owner: Principal = { kind: 'owner', id: 'owner', inboxScope: 'all', permissions: 'all', sendPolicy: 'direct' };
const session: Principal = { kind: 'session', id: 's', inboxScope: 'all', permissions: 'all', sendPolicy: 'direct', csrfToken: 'c' };

const MESSAGE_TYPES = EVENT_TYPES.filter((e) => e.startsWith('message.') && !/^message\.received\./.test(e));
const HIDDEN = [
  ['message.received.spam', 'label_spam_read'],
  ['message.received.blocked', 'label_blocked_read'],
  ['message.received.unauthenticated', 'label_unauthenticated_read'],
] as const;
const DRAFT_TYPES = EVENT_TYPES.filter((e) => e.startsWith('draft.'));
const OWNER_TYPES = EVENT_TYPES.filter((e) => /^(domain|inbound|oauth)\./.test(e));

t.test('the table covers every event type of §6.2 exactly once', async (t) => {
  t.equal(EVENT_TYPES.length, 23);
  t.equal(new Set(EVENT_TYPES).size, EVENT_TYPES.length);
  t.equal(MESSAGE_TYPES.length + HIDDEN.length + DRAFT_TYPES.length + OWNER_TYPES.length, EVENT_TYPES.length);
});

t.test('message.* events are visible with message_read', async (t) => {
  for (const type of MESSAGE_TYPES) {
    t.same(audienceOf(type), ['message_read'], type);
    t.ok(isEventVisible(agent(['message_read']), { event_type: type, inbox_id: INBOX }), `${type} with message_read`);
    t.notOk(isEventVisible(agent(['draft_read', 'message_send']), { event_type: type, inbox_id: INBOX }), `${type} without message_read`);
  }
});

t.test('hidden variants need message_read and the matching label_*_read', async (t) => {
  for (const [type, label] of HIDDEN) {
    t.same(audienceOf(type), ['message_read', label], type);
    t.ok(isEventVisible(agent(['message_read', label]), { event_type: type, inbox_id: INBOX }), `${type} with both`);
    t.notOk(isEventVisible(agent(['message_read']), { event_type: type, inbox_id: INBOX }), `${type} with message_read only`);
    t.notOk(isEventVisible(agent([label]), { event_type: type, inbox_id: INBOX }), `${type} with ${label} only`);
    const others = HIDDEN.map(([, l]) => l).filter((l) => l !== label);
    t.notOk(isEventVisible(agent(['message_read', ...others]), { event_type: type, inbox_id: INBOX }), `${type}: another label permission does not count`);
  }
});

t.test('draft.* events are visible with draft_read', async (t) => {
  t.equal(DRAFT_TYPES.length, 5);
  for (const type of DRAFT_TYPES) {
    t.ok(isEventVisible(agent(['draft_read']), { event_type: type, inbox_id: INBOX }), `${type} with draft_read`);
    t.notOk(isEventVisible(agent(['message_read']), { event_type: type, inbox_id: INBOX }), `${type} with message_read only`);
  }
});

t.test('domain, inbound and oauth events are owner only', async (t) => {
  const everything = agent([...new Set(['message_read', 'draft_read', 'label_spam_read', 'label_blocked_read', 'label_unauthenticated_read', 'webhook_read', 'inbox_read'])]);
  for (const type of OWNER_TYPES) {
    t.equal(audienceOf(type), 'owner', type);
    t.notOk(isEventVisible(everything, { event_type: type, inbox_id: INBOX }), `${type} not for an agent even with an inbox`);
    t.notOk(isEventVisible(everything, { event_type: type, inbox_id: null }), `${type} not for an agent`);
    t.ok(isEventVisible(owner, { event_type: type, inbox_id: null }), `${type} for the owner bearer`);
    t.ok(isEventVisible(session, { event_type: type, inbox_id: null }), `${type} for an owner session`);
  }
});

t.test('events without an inbox are owner only', async (t) => {
  t.notOk(isEventVisible(agent(['message_read']), { event_type: 'message.received', inbox_id: null }));
  t.ok(isEventVisible(owner, { event_type: 'message.received', inbox_id: null }));
});

t.test('an event type the table does not know is owner only', async (t) => {
  t.equal(audienceOf('webhook.created'), 'owner');
  t.notOk(isEventVisible(agent(['message_read', 'draft_read', 'webhook_read']), { event_type: 'webhook.created', inbox_id: INBOX }));
  t.ok(isEventVisible(owner, { event_type: 'webhook.created', inbox_id: INBOX }));
});

t.test('inbox scope is checked before permissions', async (t) => {
  const scoped = agent(['message_read', 'draft_read', 'label_spam_read'], [INBOX]);
  t.ok(isEventVisible(scoped, { event_type: 'message.received', inbox_id: INBOX }));
  t.notOk(isEventVisible(scoped, { event_type: 'message.received', inbox_id: OTHER }), 'out of scope');
  t.notOk(isEventVisible(scoped, { event_type: 'draft.created', inbox_id: OTHER }), 'out of scope');
  t.notOk(isEventVisible(scoped, { event_type: 'message.received.spam', inbox_id: OTHER }), 'out of scope');
  t.notOk(isEventVisible(agent(['message_read'], []), { event_type: 'message.received', inbox_id: INBOX }), 'an empty scope sees nothing');
});

t.test('the owner sees everything', async (t) => {
  for (const type of EVENT_TYPES) t.ok(isEventVisible(owner, { event_type: type, inbox_id: INBOX }), type);
});

t.test('the event stream needs message_read or draft_read; webhook permissions are not enough', async (t) => {
  t.ok(canReadEventStream(owner));
  t.ok(canReadEventStream(session));
  t.ok(canReadEventStream(agent(['message_read'])));
  t.ok(canReadEventStream(agent(['draft_read'])));
  t.notOk(canReadEventStream(agent(['webhook_read', 'webhook_create', 'webhook_update', 'webhook_delete'])));
  t.notOk(canReadEventStream(agent(['label_spam_read', 'inbox_read'])));
  t.notOk(canReadEventStream(agent([])));
});
