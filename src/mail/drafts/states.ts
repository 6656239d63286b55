/**
 * The draft state machine (spec §2.5; ARCHITECTURE §5; docs/drafts.md "States and transitions"):
 * the seven states, stored in the `send_status` column; what an AgentMail client reads of each as
 * `send_status`; and DRAFT_TRANSITIONS, the one table every draft write consults (create, patch,
 * send, approve, reject, the scheduled-drafts loop) to learn the next state, the `approved` flag,
 * the events to append and whether the call is refused. Pure: no storage, no clock, no principal.
 * Invariants: `sent` and `rejected` are final; only the owner or a `direct` credential ever makes
 * a draft approved; a refused transition changes nothing.
 */

export const DRAFT_STATUSES = ['draft', 'pending_approval', 'scheduled', 'sending', 'sent', 'rejected', 'failed'] as const;
export type DraftStatus = (typeof DRAFT_STATUSES)[number];

/** The AgentMail SDK's draft `send_status` enum; svc's full state goes in the `state` extension field. */
export const SDK_DRAFT_SEND_STATUSES = ['scheduled', 'sending', 'failed'] as const;
export type SdkDraftSendStatus = (typeof SDK_DRAFT_SEND_STATUSES)[number];

/**
 * What an AgentMail client reads as `send_status` for each svc state (docs/drafts.md). `rejected`
 * reads as `failed`: it will never be sent, a final non-delivery. The states the SDK cannot name
 * (`draft`, `pending_approval`, `sent`) leave the field out, as AgentMail does for an unsent draft.
 */
export const SDK_SEND_STATUS_OF: Readonly<Record<DraftStatus, SdkDraftSendStatus | null>> = {
  draft: null,
  pending_approval: null,
  scheduled: 'scheduled',
  sending: 'sending',
  sent: null,
  rejected: 'failed',
  failed: 'failed',
};

/** Who acts, as far as drafts care: the owner and `direct` credentials keep approval; the others do not. */
export type DraftActor = 'owner_or_direct' | 'approval' | 'read_only';

/**
 * What happens to a draft. `send` is a message send (from `new`) or a draft send (also the
 * loop's, as a `direct` principal); `due` is the loop claiming a scheduled draft; `send_failed`
 * is that claimed send refused; `restart` is the loop finding a draft a crash left `sending`.
 */
export type DraftTrigger = 'create' | 'patch' | 'send' | 'approve' | 'reject' | 'due' | 'send_failed' | 'restart';

/** What the table's guards read. Each trigger fills the facts it has; a guard reads only those. */
export interface DraftFacts {
  actor?: DraftActor;
  /** `send_at` in the request: given (`set`), `null` (`cleared`), not given (`unchanged`). */
  sendAt?: 'set' | 'cleared' | 'unchanged';
  /** The draft's `approved` flag, or (send) that this send carries the owner's approval. */
  approved?: boolean;
  /** Approve: `send_at` is still ahead (the draft is scheduled rather than sent). */
  sendAtAhead?: boolean;
  /** send_failed: the error code the send was refused with. */
  errorCode?: string;
}

export type DraftEventType = 'draft.created' | 'draft.approval_required' | 'draft.approved' | 'draft.rejected' | 'draft.sent';

/**
 * Why a transition is refused; each call site turns it into its documented ApiError: `sent`,
 * `rejected`, `sending`, `awaiting_owner` → 409 conflict; `read_only_schedule`, `read_only_send`
 * → 403 missing_permission.
 */
export type DraftRefusal = 'sent' | 'rejected' | 'sending' | 'awaiting_owner' | 'read_only_schedule' | 'read_only_send';

/** `new`: no draft yet (create, or a message send). */
export type DraftFrom = DraftStatus | 'new';

export interface DraftTransition {
  from: readonly DraftFrom[];
  trigger: DraftTrigger;
  /** The condition, as docs/drafts.md words it. */
  when: string;
  guard: (f: DraftFacts) => boolean;
  /** The next state; `unchanged` keeps the current one (from `new`: no draft is made). */
  to: DraftStatus | 'unchanged' | { refused: DraftRefusal };
  /** The `approved` flag after it: set, cleared, or `kept` (kept only for the owner or a `direct` actor). */
  approved?: boolean | 'kept';
  events: readonly DraftEventType[];
  /** The call answers `403 approval_required` (with the draft id) after the write commits. */
  answersApprovalRequired?: boolean;
}

const ALL: readonly DraftStatus[] = DRAFT_STATUSES;
const NOT_FINAL: readonly DraftStatus[] = ['draft', 'pending_approval', 'scheduled', 'sending', 'failed'];
const EDITABLE: readonly DraftStatus[] = ['draft', 'pending_approval', 'scheduled', 'failed'];
const always = () => true;
const by = (...actors: DraftActor[]) => (f: DraftFacts) => actors.includes(f.actor!);

/**
 * The draft transitions, first matching row wins (so refusals come before the rows they guard).
 * docs/drafts.md has the same rows; test/unit/draft-states.test.ts checks each.
 */
export const DRAFT_TRANSITIONS: readonly DraftTransition[] = [
  // create (spec §2.5): a schedule starts approved only for the owner or a `direct` credential.
  { from: ['new'], trigger: 'create', when: 'without `send_at`', guard: (f) => f.sendAt !== 'set', to: 'draft', approved: false, events: ['draft.created'] },
  { from: ['new'], trigger: 'create', when: 'with `send_at` by the owner or a `direct` credential', guard: (f) => f.sendAt === 'set' && f.actor === 'owner_or_direct', to: 'scheduled', approved: true, events: ['draft.created'] },
  { from: ['new'], trigger: 'create', when: 'with `send_at` under `approval`', guard: (f) => f.sendAt === 'set' && f.actor === 'approval', to: 'pending_approval', approved: false, events: ['draft.created', 'draft.approval_required'] },
  { from: ['new'], trigger: 'create', when: 'with `send_at` under `read_only`', guard: (f) => f.sendAt === 'set' && f.actor === 'read_only', to: { refused: 'read_only_schedule' }, events: [] },

  // send: a message send, a draft send, the loop's send of a claimed draft.
  { from: ['new'], trigger: 'send', when: 'send, reply, reply-all or forward under `approval`', guard: by('approval'), to: 'pending_approval', approved: false, events: ['draft.approval_required'], answersApprovalRequired: true },
  { from: ['new'], trigger: 'send', when: 'send, reply, reply-all or forward under `read_only`', guard: by('read_only'), to: { refused: 'read_only_send' }, events: [] },
  { from: ['new'], trigger: 'send', when: 'send, reply, reply-all or forward by the owner or a `direct` credential (queued, no draft)', guard: by('owner_or_direct'), to: 'unchanged', events: [] },
  { from: ['sent'], trigger: 'send', when: 'draft send', guard: always, to: { refused: 'sent' }, events: [] },
  { from: ['rejected'], trigger: 'send', when: 'draft send', guard: always, to: { refused: 'rejected' }, events: [] },
  { from: ['pending_approval'], trigger: 'send', when: 'draft send under `approval`, not approved (already waiting: nothing written)', guard: (f) => f.actor === 'approval' && !f.approved, to: 'unchanged', events: [], answersApprovalRequired: true },
  { from: NOT_FINAL, trigger: 'send', when: 'draft send under `approval`, not approved', guard: (f) => f.actor === 'approval' && !f.approved, to: 'pending_approval', approved: false, events: ['draft.approval_required'], answersApprovalRequired: true },
  { from: NOT_FINAL, trigger: 'send', when: 'draft send under `read_only`', guard: by('read_only'), to: { refused: 'read_only_send' }, events: [] },
  { from: NOT_FINAL, trigger: 'send', when: 'draft send (`draft_send`), `direct` or approved (overrides `send_at`; also the loop)', guard: always, to: 'sent', events: ['draft.sent'] },

  // approve (owner only).
  { from: ['sent'], trigger: 'approve', when: 'owner approve', guard: always, to: { refused: 'sent' }, events: [] },
  { from: ['rejected'], trigger: 'approve', when: 'owner approve', guard: always, to: { refused: 'rejected' }, events: [] },
  { from: ['scheduled'], trigger: 'approve', when: 'owner approve, `send_at` ahead, already approved', guard: (f) => f.sendAtAhead === true && f.approved === true, to: 'unchanged', events: [] },
  { from: NOT_FINAL, trigger: 'approve', when: 'owner approve, `send_at` ahead', guard: (f) => f.sendAtAhead === true, to: 'scheduled', approved: true, events: ['draft.approved'] },
  { from: NOT_FINAL, trigger: 'approve', when: 'owner approve, `send_at` missing or due', guard: always, to: 'sent', approved: true, events: ['draft.approved', 'draft.sent'] },

  // the scheduled-drafts loop.
  { from: ['scheduled'], trigger: 'due', when: '`send_at` passes, approved (the loop claims it)', guard: (f) => f.approved === true, to: 'sending', events: [] },
  { from: ['sending'], trigger: 'send_failed', when: 'no transport (`service_unavailable`)', guard: (f) => f.errorCode === 'service_unavailable', to: 'scheduled', events: [] },
  { from: ['sending'], trigger: 'send_failed', when: 'sent, rejected or deleted meanwhile (`conflict`, `not_found`)', guard: (f) => f.errorCode === 'conflict' || f.errorCode === 'not_found', to: 'unchanged', events: [] },
  { from: ['sending'], trigger: 'send_failed', when: 'send refused: `inbox_paused`, `message_rejected`, `payload_too_large`, `validation_error`, …', guard: always, to: 'failed', events: [] },
  { from: ['sending'], trigger: 'restart', when: 'a stop or crash left it `sending` (it was not queued)', guard: always, to: 'scheduled', events: [] },

  // reject (owner only).
  { from: ['rejected'], trigger: 'reject', when: 'owner reject again', guard: always, to: 'unchanged', events: [] },
  { from: ['sent'], trigger: 'reject', when: 'owner reject', guard: always, to: { refused: 'sent' }, events: [] },
  { from: ['sending'], trigger: 'reject', when: 'owner reject', guard: always, to: { refused: 'sending' }, events: [] },
  { from: EDITABLE, trigger: 'reject', when: 'owner reject `{ reason? }`', guard: always, to: 'rejected', approved: false, events: ['draft.rejected'] },

  // patch: approval binds content; edits by others withdraw it.
  { from: ['sending'], trigger: 'patch', when: 'any patch', guard: always, to: { refused: 'sending' }, events: [] },
  { from: ['sent'], trigger: 'patch', when: 'any patch', guard: always, to: { refused: 'sent' }, events: [] },
  { from: ['rejected'], trigger: 'patch', when: 'any patch', guard: always, to: { refused: 'rejected' }, events: [] },
  { from: ['pending_approval'], trigger: 'patch', when: 'patch by an `approval` or `read_only` agent', guard: by('approval', 'read_only'), to: { refused: 'awaiting_owner' }, events: [] },
  { from: EDITABLE, trigger: 'patch', when: 'patch setting `send_at` under `read_only`', guard: (f) => f.sendAt === 'set' && f.actor === 'read_only', to: { refused: 'read_only_schedule' }, events: [] },
  { from: EDITABLE, trigger: 'patch', when: 'patch `send_at: null`', guard: (f) => f.sendAt === 'cleared', to: 'draft', approved: 'kept', events: [] },
  { from: ['pending_approval'], trigger: 'patch', when: 'patch setting `send_at` by the owner or a `direct` credential', guard: (f) => f.sendAt === 'set', to: 'scheduled', approved: true, events: ['draft.approved'] },
  { from: EDITABLE, trigger: 'patch', when: 'patch setting `send_at` by the owner or a `direct` credential', guard: (f) => f.sendAt === 'set' && f.actor === 'owner_or_direct', to: 'scheduled', approved: true, events: [] },
  { from: EDITABLE, trigger: 'patch', when: 'patch setting `send_at` under `approval`', guard: (f) => f.sendAt === 'set', to: 'pending_approval', approved: false, events: ['draft.approval_required'] },
  { from: ['scheduled'], trigger: 'patch', when: 'patch by the owner or a `direct` credential of an approved schedule', guard: (f) => f.actor === 'owner_or_direct' && f.approved === true, to: 'unchanged', approved: 'kept', events: [] },
  { from: ['scheduled'], trigger: 'patch', when: 'patch by an `approval` or `read_only` agent (or of a schedule never approved)', guard: always, to: 'pending_approval', approved: 'kept', events: ['draft.approval_required'] },
  { from: EDITABLE, trigger: 'patch', when: 'other patches (content, labels)', guard: always, to: 'unchanged', approved: 'kept', events: [] },
];

/** The row that decides `trigger` from `from` given `facts`. No row is a bug in the table, not a caller's error. */
export function draftTransition(from: DraftFrom, trigger: DraftTrigger, facts: DraftFacts = {}): DraftTransition {
  const row = DRAFT_TRANSITIONS.find((r) => r.trigger === trigger && r.from.includes(from) && r.guard(facts));
  if (!row) throw new Error(`No draft transition for ${trigger} from ${from}.`);
  return row;
}

/** The state after `row` from `from` (`unchanged` resolved); null for a refusal or no draft. */
export function nextDraftStatus(row: DraftTransition, from: DraftFrom): DraftStatus | null {
  if (typeof row.to === 'object') return null;
  if (row.to === 'unchanged') return from === 'new' ? null : from;
  return row.to;
}

/** The `approved` flag after `row`: `kept` keeps the current flag only for the owner or a `direct` actor. */
export function nextApproved(row: DraftTransition, current: boolean, actor: DraftActor | undefined): boolean {
  if (row.approved === undefined) return current;
  if (row.approved === 'kept') return current && actor === 'owner_or_direct';
  return row.approved;
}
