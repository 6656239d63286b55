/**
 * "Needs you": every queue that waits for the owner on one page, each item actionable in place —
 * drafts to approve (exactly the version shown) or reject, drafts the outbound guard held, sends
 * whose outcome is unknown (resolve), and incoming mail svc could not process (retry, delete).
 * The old paths /approvals, /send-unknown and /quarantine open their section here.
 */
import { useEffect, useState } from 'preact/hooks';
import { del, enc, post } from '../api';
import { ErrorBox, Loading, Notice, Page, bytes, confirmed, useAction, when } from '../ui';
import { PendingDraft, SendUnknownItem } from './control';
import { useWorkQueues } from '../work-queues';
import { QUARANTINE_RETRY_BACKOFF_MS } from '../../../src/supervisor/loop-table';
import type { ComponentChildren } from 'preact';
import type { QuarantineItem } from '../api-types';

/** A delay as the owner reads it: `1 min`, `2 h`. */
const duration = (ms: number) => (ms >= 3_600_000 && ms % 3_600_000 === 0 ? `${ms / 3_600_000} h` : `${Math.round(ms / 60_000)} min`);
/** The service's own automatic retry schedule (src/supervisor/loop-table.ts), as a sentence: `1 min, 5 min, 30 min and 2 h`. */
const RETRY_SCHEDULE = ((d) => `${d.slice(0, -1).join(', ')} and ${d.at(-1)}`)(QUARANTINE_RETRY_BACKOFF_MS.map(duration));

/** What each reason code means for the owner: what happened, and what to do (docs/inbound.md). */
const REASONS: Record<string, { title: string; happened: string; todo: string }> = {
  parse_failed: {
    title: 'Could not be read',
    happened: 'The message opened but could not be read as email: it is malformed, or reading it ran out of memory while svc was busy.',
    todo: `svc retries it on its own after ${RETRY_SCHEDULE}. If it still fails after that, Retry once more, or Delete it and ask the sender to send it again.`,
  },
  parse_limit_exceeded: {
    title: 'Too costly to read',
    happened: 'Reading this message took longer or needed more memory than any message may, or its address headers are far beyond what mail uses. It was set aside so the rest of your mail kept flowing.',
    todo: 'svc does not retry it on its own. Retry once if svc was very busy when it arrived; otherwise Delete it.',
  },
  commit_failed: {
    title: 'Could not be stored',
    happened: 'The message was read but could not be saved into the inbox.',
    todo: `svc retries it on its own after ${RETRY_SCHEDULE}. If it keeps failing, check free disk space and Retry, or Delete it.`,
  },
  open_failed: {
    title: 'Could not be decrypted',
    happened: "The edge holds this message sealed to a key that is not this home's key (for example the edge was paired with another home), or the stored ciphertext was altered.",
    todo: 'Waiting will not help. Pair the edge with the home it was sealed for and Retry there, or Delete it.',
  },
  object_missing: {
    title: 'Lost at the edge',
    happened: 'The edge accepted this message but its stored copy is gone (for example removed from its disk); only its size and recipient are known.',
    todo: 'It cannot be recovered. Delete it, and ask the sender to send the message again.',
  },
};

/** One quarantined item (metadata only): what happened in plain words, Retry and Delete. */
function QuarantineEntry({ i, onDone, onNote }: { i: QuarantineItem; onDone: () => void; onNote: (note: string) => void }) {
  const action = useAction();
  const reason = REASONS[i.reason_code];
  return (
    <li class="queue-item" data-quarantine={i.quarantine_id}>
      <div class="item-line">
        <span>
          <strong>{reason?.title ?? i.reason_code}</strong> <code class="small">{i.reason_code}</code>
        </span>
        <span class="badge warn">{i.status}</span>
      </div>
      {reason && (
        <p class="small" data-testid="quarantine-reason">
          {reason.happened} {reason.todo}
        </p>
      )}
      <div class="small muted">
        {i.size === null ? 'size unknown' : bytes(i.size)} · for {i.inbox_id ?? 'an unknown inbox'} · first seen {when(i.first_seen)} · attempts {i.attempts ?? '?'}
      </div>
      <div class="actions" style={{ marginTop: '0.4rem' }}>
        <button
          class="small"
          disabled={action.busy || i.source_kind !== 'buffer_object' || i.status === 'delete_pending'}
          onClick={() =>
            void action.run(async () => {
              const r = await post<{ status: string }>(`/v0/owner/quarantine/${enc(i.quarantine_id)}/retry`);
              onNote(r.status === 'released' ? 'Retried: the message was received and is in its inbox.' : 'Retried: it still fails, so it stays here.');
              onDone();
            })
          }
        >
          Retry
        </button>
        <button
          class="small danger"
          disabled={action.busy}
          onClick={() =>
            confirmed('Delete this message for good? It cannot be recovered.') &&
            void action.run(async () => {
              await del(`/v0/owner/quarantine/${enc(i.quarantine_id)}`);
              onDone();
            })
          }
        >
          Delete
        </button>
      </div>
      <ErrorBox error={action.error} />
    </li>
  );
}

/** Which section of the page each queue is: its anchor, heading and what an empty queue says. */
export const QUEUE_SECTIONS = {
  approvals: { id: 'approvals', title: 'Waiting for your approval', empty: 'Nothing is waiting for approval.' },
  held: { id: 'held', title: 'Held by the outbound guard', empty: 'The outbound guard is holding nothing.' },
  sendUnknown: { id: 'send-unknown', title: 'Not sure they were sent', empty: 'No message has an unknown outcome.' },
  quarantine: { id: 'quarantine', title: 'Incoming mail that could not be received', empty: 'No incoming mail is stuck.' },
} as const;

function Section({ which, count, intro, children }: { which: keyof typeof QUEUE_SECTIONS; count: number | null; intro: ComponentChildren; children: ComponentChildren }) {
  const s = QUEUE_SECTIONS[which];
  return (
    <section id={s.id} class="queue" aria-labelledby={`${s.id}-title`}>
      <h2 id={`${s.id}-title`}>
        {s.title} {count !== null && <span class={`badge${count ? ' warn' : ''}`} data-testid={`${s.id}-count`}>{count}</span>}
      </h2>
      <p class="muted small">{intro}</p>
      {count === 0 && <p class="muted">{s.empty}</p>}
      {children}
    </section>
  );
}

export function NeedsYouPage({ hash }: { hash: string }) {
  const q = useWorkQueues();
  // The last decision stays on screen until the next one, however often the lists refresh.
  const [decided, setDecided] = useState<string | null>(null);
  const [note, setNote] = useState<string | null>(null);
  const d = q.data;
  // An old link (/approvals, /quarantine, …) or a count in the summary opens its section.
  useEffect(() => {
    if (hash) document.getElementById(hash.slice(1))?.scrollIntoView();
  }, [hash, d !== null]);
  return (
    <Page title="Needs you">
      <p class="muted">Everything waiting for a decision from you. Each item can be settled here; nothing on this page happens without you.</p>
      {d && (
        <nav class="queue-summary small" aria-label="Queues">
          {(Object.keys(QUEUE_SECTIONS) as (keyof typeof QUEUE_SECTIONS)[]).map((k) => (
            <a key={k} href={`#${QUEUE_SECTIONS[k].id}`}>
              {QUEUE_SECTIONS[k].title} <span class="badge">{k === 'quarantine' ? d.quarantineTotal : d[k].length}</span>
            </a>
          ))}
        </nav>
      )}
      {decided && (
        <div data-testid="approval-result">
          <Notice>{decided}</Notice>
        </div>
      )}
      {note && <Notice>{note}</Notice>}
      <Loading loaded={q} />
      <Section which="approvals" count={d ? d.approvals.length : null} intro="Agents whose key asks for your approval wrote these. Nothing leaves until you approve it; you approve exactly what is shown.">
        <ul class="items plain" data-testid="approvals">
          {d?.approvals.map((x) => <PendingDraft key={x.draft_id} item={x} onDone={q.reload} onDecided={setDecided} />)}
        </ul>
      </Section>
      <Section which="held" count={d ? d.held.length : null} intro="An agent with the guarded policy tried to send these and the outbound guard found a reason to stop them (shown on each). Approve to send, or reject.">
        <ul class="items plain" data-testid="held">
          {d?.held.map((x) => <PendingDraft key={x.draft_id} item={x} onDone={q.reload} onDecided={setDecided} />)}
        </ul>
      </Section>
      <Section
        which="sendUnknown"
        count={d ? d.sendUnknown.length : null}
        intro="The mail server took these but its answer was lost, so svc cannot tell whether they went out. Check with the recipient or the provider, then record what happened. Nothing is sent again."
      >
        <ul class="items" data-testid="send-unknown">
          {d?.sendUnknown.map((m) => <SendUnknownItem key={m.message_id} m={m} onDone={q.reload} />)}
        </ul>
      </Section>
      <Section which="quarantine" count={d ? d.quarantineTotal : null} intro="Mail that reached your edge but could not be opened or stored (quarantine). It stays sealed at the edge until you retry or delete it; nothing here is decrypted.">
        <ul class="items" data-testid="quarantine">
          {d?.quarantine.map((i) => <QuarantineEntry key={i.quarantine_id} i={i} onDone={q.reload} onNote={setNote} />)}
        </ul>
      </Section>
    </Page>
  );
}
