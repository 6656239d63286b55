/**
 * The one path every send takes — REST send/reply/reply-all/forward, draft send, owner approve,
 * the scheduled-drafts loop and MCP — with the checks of spec §4.5 in their order:
 * idempotent replay → derive and validate → 413 → `message_rejected` → `inbox_paused` → 503 →
 * send policy (`approval_required` with a draft, `read_only` → `missing_permission`) → queue.
 * What a send does to a draft (refused, waits for the owner, or `sent`) is the draft table's
 * row (src/mail/drafts/states.ts), decided again inside each transaction from the current state.
 */
import type { Db } from '../db/open.js';
import type { InboxRow } from '../auth/access.js';
import { ApiError } from '../core/errors.js';
import type { Principal } from '../auth/principal.js';
import { parseRecipients, type Composition } from './compose.js';
import { domainDkimKey } from './dkim-keys.js';
import { draftActor } from './drafts/policy.js';
import { draftAttachmentContents, draftEvent, draftRow, insertDraft, setDraftStatus, setGuardFindings } from './drafts/repository.js';
import { firstContactsOf, guardInputs, heldBecause, heldFor, reserveFirstContacts } from './guard.js';
import { inspectContent, type GuardContent, type GuardFinding } from './guard-content.js';
import { draftTransition, nextApproved, nextDraftStatus, type DraftFrom, type DraftTransition } from './drafts/states.js';
import type { DraftRow } from './drafts/shapes.js';
import { recordIdempotent, replayIdempotent, type IdempotentKind } from './idempotency.js';
import {
  deriveForward,
  deriveReply,
  loadOriginal,
  originalAttachments,
  prepareSend,
  queueOutbound,
  sendChecks,
  type ComposeMime,
  type OriginalMessage,
  type OutboundKind,
  type Threading,
} from './outbound.js';

export interface SendContext {
  db: Db;
  principal: Principal;
  compose: ComposeMime;
  /** Publishes an appended event after its commit. */
  publish: (seq: number) => void;
  /** Wakes the outbox after a message was queued. */
  wakeOutbox: () => void;
  /** Scans a guarded send's content off this thread (the CPU pool); absent: scanned here (the scheduled-drafts loop sends as `direct` and never asks). */
  inspect?: (content: GuardContent) => Promise<GuardFinding[]>;
  /** Runs the queueing write in a transaction and resolves once it is durable (request handlers share commits). */
  commit?: <T>(fn: () => T) => Promise<T>;
}

export type SendSource =
  | { type: 'new'; kind: OutboundKind; composition: Composition; original: OriginalMessage | null; replyAll: boolean }
  | { type: 'draft'; draft: DraftRow; approve: boolean; extraLabels?: string[]; removeLabels?: string[] };

export interface SendSpec {
  inbox: InboxRow;
  source: SendSource;
  idempotency: { key: string; hash: string } | null;
}

export interface SendResult {
  message_id: string;
  thread_id: string;
}

export const approvalRequired = (draftId: string, held: readonly GuardFinding[] = []) =>
  held.length === 0
    ? new ApiError('approval_required', 'This credential sends only with the owner’s approval: the message was saved as a draft awaiting approval.', {
        fix: 'Wait for the owner to approve the draft (event `draft.approved`, then `draft.sent`), or ask for a `direct` send policy.',
        extra: { draft_id: draftId },
      })
    : new ApiError('approval_required', `The outbound guard held this message for the owner’s approval: ${heldBecause(held)}. It was saved as a draft awaiting approval.`, {
        fix: 'Wait for the owner to approve the draft (event `draft.approved`, then `draft.sent`); if it should not carry this, delete the draft and send it without.',
        extra: { draft_id: draftId, reasons: held.map((f) => ({ detector: f.detector, detail: f.detail })) },
      });

const readOnly = () =>
  new ApiError('missing_permission', 'This credential has the `read_only` send policy and cannot send mail.', { fix: 'Ask the owner for a key with the `direct` or `approval` send policy.' });

function replayed(result: ReturnType<typeof replayIdempotent>, db?: Db): SendResult | null {
  if (!result) return null;
  if (result.kind === 'approval') throw approvalRequired(result.draftId!, db ? heldReasons(db, result.draftId!) : []);
  return { message_id: result.messageId!, thread_id: result.threadId! };
}

const ALL_VISIBLE = { excluded: [] } as const;

/** Why the guard held a draft, for a replayed answer (the draft may be gone or decided since: then none). */
function heldReasons(db: Db, draftId: string): GuardFinding[] {
  const row = db.prepare("SELECT guard_findings FROM drafts WHERE draft_id = ? AND send_status = 'pending_approval'").get(draftId) as { guard_findings: string | null } | undefined;
  return row?.guard_findings ? (JSON.parse(row.guard_findings) as GuardFinding[]) : [];
}

/** The composition and threading a draft sends as: stored fields, plus the forwarded original. */
function fromDraft(db: Db, inboxId: string, d: DraftRow): { kind: OutboundKind; composition: Composition; threading: Threading } {
  const parse = (json: string | null, name: string) => parseRecipients(json ? (JSON.parse(json) as string[]) : [], name);
  const composition: Composition = {
    to: parse(d.to_addresses, 'to'),
    cc: parse(d.cc_addresses, 'cc'),
    bcc: parse(d.bcc_addresses, 'bcc'),
    replyTo: parse(d.reply_to, 'reply_to'),
    subject: d.subject,
    text: d.text,
    html: d.html,
    attachments: draftAttachmentContents(db, d.draft_id),
    headers: d.headers ? (JSON.parse(d.headers) as Record<string, string>) : {},
    labels: JSON.parse(d.labels) as string[],
  };
  if (d.forward_of) {
    const original = loadOriginal(db, inboxId, d.forward_of, ALL_VISIBLE);
    if (!original) throw new ApiError('validation_error', 'The message this draft forwards no longer exists.', { fix: 'Delete the draft and forward another message.' });
    return { kind: 'forward', ...deriveForward(original, composition, originalAttachments(db, original.rowid)) };
  }
  if (d.in_reply_to) {
    const original = loadOriginal(db, inboxId, d.in_reply_to, ALL_VISIBLE);
    const refs = d.refs ? (JSON.parse(d.refs) as string[]) : [];
    return { kind: 'reply', composition, threading: { threadId: original?.threadId ?? null, inReplyTo: d.in_reply_to, references: refs.length ? refs : [d.in_reply_to] } };
  }
  // A plain draft's own `references` thread it with the conversation they name.
  return { kind: 'send', composition, threading: { threadId: null, inReplyTo: null, references: d.refs ? (JSON.parse(d.refs) as string[]) : [] } };
}

function derive(db: Db, inbox: InboxRow, source: SendSource): { kind: OutboundKind; composition: Composition; threading: Threading } {
  if (source.type === 'draft') {
    const derived = fromDraft(db, inbox.inbox_id, source.draft);
    const remove = new Set(source.removeLabels ?? []);
    const labels = [...new Set([...derived.composition.labels, ...(source.extraLabels ?? [])])].filter((l) => !remove.has(l));
    return { ...derived, composition: { ...derived.composition, labels } };
  }
  const { kind, composition, original, replyAll } = source;
  if (kind === 'reply') return { kind, ...deriveReply(inbox.inbox_id, original!, composition, replyAll) };
  if (kind === 'forward') return { kind, ...deriveForward(original!, composition, originalAttachments(db, original!.rowid)) };
  return { kind, composition, threading: { threadId: null, inReplyTo: null, references: [] } };
}

/** The draft an approval-policy (or held guarded) send becomes: what was asked, not yet merged with a forwarded original. */
function approvalDraft(db: Db, ctx: SendContext, inbox: InboxRow, step: DraftTransition, source: Extract<SendSource, { type: 'new' }>, derived: { composition: Composition; threading: Threading }): DraftRow {
  const base = { inboxId: inbox.inbox_id, status: nextDraftStatus(step, 'new')!, approved: nextApproved(step, false, draftActor(ctx.principal)), createdBy: ctx.principal.id };
  if (source.kind === 'forward') return insertDraft(db, { ...base, composition: source.composition, forwardOf: source.original!.messageId });
  if (source.kind === 'reply') {
    return insertDraft(db, { ...base, composition: derived.composition, inReplyTo: source.original!.messageId, replyAll: source.replyAll, references: derived.threading.references });
  }
  return insertDraft(db, { ...base, composition: derived.composition });
}

function idempotentKindFor(source: SendSource): IdempotentKind {
  return source.type === 'new' ? 'send' : source.approve ? 'draft_approve' : 'draft_send';
}

/**
 * Sends (queues) or, under the `approval` policy, turns the send into a draft awaiting the owner.
 * Throws the documented ApiError for every refusal; nothing is stored when it throws, except the
 * approval draft (with its event and idempotency key).
 */
export async function performSend(ctx: SendContext, spec: SendSpec): Promise<SendResult> {
  const { db, principal } = ctx;
  const { inbox, source, idempotency } = spec;
  if (idempotency) {
    const earlier = replayed(replayIdempotent(db, inbox.inbox_id, idempotency.key, idempotency.hash), db);
    if (earlier) return earlier;
  }
  // The draft table decides what this send does to a draft; a final draft is refused before any work.
  const trigger = source.type === 'draft' && source.approve ? 'approve' : 'send';
  const facts = { actor: draftActor(principal), approved: source.type === 'draft' && (source.approve || source.draft.approved === 1), sendAtAhead: false };
  const decide = (from: DraftFrom) => draftTransition(from, trigger, facts);
  let step = decide(source.type === 'draft' ? source.draft.send_status : 'new');
  if (source.type === 'draft') sendable(step, source.draft);

  const derived = derive(db, inbox, source);
  // A guarded credential's send goes out unless the guard finds what must wait for the owner
  // (src/mail/guard.ts). It checks every send of the credential, a draft's too: a draft's
  // `approved` flag may be a guarded schedule's own, not the owner's word, and the owner's
  // approval of a schedule is carried out by the scheduled-drafts loop, not by the agent.
  const guarded = principal.sendPolicy === 'guarded';
  const inputs = guarded ? guardInputs(db, inbox.inbox_id, derived.composition, { draftId: source.type === 'draft' ? source.draft.draft_id : null, threading: derived.threading }) : null;
  // A guarded send's first contacts count against the day from the volume check until it is
  // queued (or held, or fails): reserved before the content scan's await, so that racing sends
  // cannot together pass the daily limit.
  let release = inputs && !inputs.volume ? reserveFirstContacts(inbox.inbox_id, firstContactsOf(db, inbox.inbox_id, derived.composition)) : () => undefined;
  try {
    // The content scan runs in the CPU pool (ctx.inspect), off the request thread.
    const held = inputs === null ? [] : heldFor(inputs, inputs.content === null ? [] : ctx.inspect ? await ctx.inspect(inputs.content) : inspectContent(inputs.content));
    if (held.length > 0) {
      release();
      release = () => undefined;
      facts.actor = draftActor(principal, true);
      facts.approved = false;
      step = decide(source.type === 'draft' ? source.draft.send_status : 'new');
    }
    return await sendPrepared(ctx, spec, { derived, held, step, facts, decide });
  } finally {
    release();
  }
}

interface Decided {
  derived: ReturnType<typeof derive>;
  held: GuardFinding[];
  step: DraftTransition;
  facts: { actor: ReturnType<typeof draftActor>; approved: boolean; sendAtAhead: boolean };
  decide: (from: DraftFrom) => DraftTransition;
}

/** performSend once the send is decided: compose, check, then the approval draft or the queueing commit. */
async function sendPrepared(ctx: SendContext, spec: SendSpec, { derived, held, step, facts, decide }: Decided): Promise<SendResult> {
  const { db } = ctx;
  const { inbox, source, idempotency } = spec;
  const prepared = await prepareSend(inbox, derived.kind, derived.composition, derived.threading, ctx.compose, await domainDkimKey(db, inbox.domain));
  sendChecks(db, inbox, derived.kind, derived.composition);

  if (step.answersApprovalRequired) {
    const seqs: number[] = [];
    const draftId = db.transaction(() => {
      if (idempotency) {
        const again = replayed(replayIdempotent(db, inbox.inbox_id, idempotency.key, idempotency.hash));
        if (again) return null;
      }
      let draft: DraftRow;
      let events = step.events;
      if (source.type === 'new') {
        draft = approvalDraft(db, ctx, inbox, step, source, derived);
        if (held.length > 0) {
          setGuardFindings(db, draft.draft_id, held);
          draft = draftRow(db, inbox.inbox_id, draft.draft_id)!;
        }
      } else {
        const current = draftRow(db, inbox.inbox_id, source.draft.draft_id);
        if (!current) throw new ApiError('not_found', 'The draft was deleted.', { fix: 'Create a new draft.' });
        const currentStep = sendable(decide(current.send_status), current);
        // Already waiting (`unchanged`): asking again would move its version and spoil the owner's approve.
        if (nextDraftStatus(currentStep, current.send_status) === current.send_status) {
          if (held.length > 0) setGuardFindings(db, current.draft_id, held);
          if (idempotency) recordIdempotent(db, inbox.inbox_id, idempotency.key, idempotency.hash, { kind: 'approval', messageId: null, threadId: null, draftId: current.draft_id });
          return current.draft_id;
        }
        setDraftStatus(db, current.draft_id, nextDraftStatus(currentStep, current.send_status)!, { approved: nextApproved(currentStep, current.approved === 1, facts.actor) });
        if (held.length > 0) setGuardFindings(db, current.draft_id, held);
        draft = draftRow(db, inbox.inbox_id, source.draft.draft_id)!;
        events = currentStep.events;
      }
      for (const e of events) seqs.push(draftEvent(db, e, draft));
      if (idempotency) recordIdempotent(db, inbox.inbox_id, idempotency.key, idempotency.hash, { kind: 'approval', messageId: null, threadId: null, draftId: draft.draft_id });
      return draft.draft_id;
    }).immediate();
    seqs.forEach(ctx.publish);
    if (draftId === null) return replayed(replayIdempotent(db, inbox.inbox_id, idempotency!.key, idempotency!.hash), db)!;
    throw approvalRequired(draftId, held);
  }
  if (typeof step.to === 'object' && step.to.refused === 'read_only_send') throw readOnly();

  const commit = ctx.commit ?? (<T>(fn: () => T) => Promise.resolve(db.transaction(fn).immediate()));
  const { result, seqs } = await commit((): { result: SendResult; seqs: number[] } => {
    const seqs: number[] = [];
    if (idempotency) {
      const again = replayed(replayIdempotent(db, inbox.inbox_id, idempotency.key, idempotency.hash));
      if (again) return { result: again, seqs };
    }
    if (source.type === 'draft') {
      // Deleted while the MIME was being built: nothing to send (and no row to mark sent).
      const current = draftRow(db, inbox.inbox_id, source.draft.draft_id);
      if (!current) throw new ApiError('not_found', 'The draft was deleted.', { fix: 'Create a new draft.' });
      sendable(decide(current.send_status), current);
      // The MIME was built from the version read before; an edit since then must not go out as
      // an approval of the older version, nor leave the draft `sent` with content never sent.
      if (current.updated_at !== source.draft.updated_at) {
        throw new ApiError('conflict', 'The draft changed while it was being sent; nothing was sent.', { fix: 'Read the draft again and send or approve it as it is now.' });
      }
    }
    const queued = queueOutbound(db, prepared);
    if (source.type === 'draft') {
      setDraftStatus(db, source.draft.draft_id, nextDraftStatus(step, source.draft.send_status)!, {
        messageId: queued.messageId,
        threadId: queued.threadId,
        approved: step.approved === undefined ? undefined : nextApproved(step, source.draft.approved === 1, facts.actor),
      });
      const row = draftRow(db, inbox.inbox_id, source.draft.draft_id)!;
      for (const e of step.events) seqs.push(draftEvent(db, e, row));
    }
    if (idempotency) {
      recordIdempotent(db, inbox.inbox_id, idempotency.key, idempotency.hash, { kind: idempotentKindFor(source), messageId: queued.messageId, threadId: queued.threadId, draftId: source.type === 'draft' ? source.draft.draft_id : null });
    }
    return { result: { message_id: queued.messageId, thread_id: queued.threadId }, seqs };
  });
  seqs.forEach(ctx.publish);
  ctx.wakeOutbox();
  return result;
}

/** The table's row for a draft send; sent and rejected drafts are final (409). */
function sendable(step: DraftTransition, d: DraftRow): DraftTransition {
  if (typeof step.to !== 'object' || (step.to.refused !== 'sent' && step.to.refused !== 'rejected')) return step;
  if (step.to.refused === 'sent') {
    throw new ApiError('conflict', 'This draft was already sent.', { fix: `Read the sent message ${d.message_id ?? ''} instead; create a new draft to send again.`.replace('  ', ' ') });
  }
  throw new ApiError('conflict', 'The owner rejected this draft; it cannot be sent.', { fix: 'Create a new draft.' });
}
