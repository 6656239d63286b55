/**
 * The owner's work queues, loaded once for the whole app: drafts waiting for approval, drafts the
 * outbound guard held, sends whose outcome is unknown, and quarantined inbound mail. The
 * navigation shows their count and the "Needs you" page their items from the same load, so the
 * two never disagree; the live events that change a queue reload it.
 */
import { useEffect, useState } from 'preact/hooks';
import { enc, get, query } from './api';
import { useLiveEvents } from './live';
import type { DraftItem, MessageItem, QuarantineItem } from './api-types';

export interface WorkQueues {
  /** `pending_approval` drafts of agents under the approval policy. */
  approvals: DraftItem[];
  /** `pending_approval` drafts the outbound guard held (they carry `guard_findings`). */
  held: DraftItem[];
  /** Messages labelled `send_unknown`: the transport took them, the answer was lost. */
  sendUnknown: MessageItem[];
  quarantine: QuarantineItem[];
  /** All quarantined items, also those beyond the listed page. */
  quarantineTotal: number;
}

/**
 * A queue longer than DRAFT_PAGES_MAX pages of drafts shows its newest part; acting on those
 * brings the rest up. The same bound holds for inboxes asked for send-unknown messages.
 */
const DRAFT_PAGES_MAX = 10;
const PAGE_SIZE = 100;
/**
 * The events that change a queue: any draft event, a send becoming unknown or settled (the owner's
 * resolve ends in `message.sent` or `message.failed`), anything about inbound mail. Not
 * `message.received`, so arriving mail does not reload every inbox's list.
 */
const QUEUE_EVENTS = ['draft.', 'message.send_unknown', 'message.sent', 'message.failed', 'inbound.'];
/** Live events come in bursts (a batch of mail): one reload after the burst. */
const RELOAD_DELAY_MS = 300;

/** The drafts in one state across every inbox, newest first (`send_status` filters on svc's `state`). */
export async function draftsWithStatus(status: string): Promise<DraftItem[]> {
  const out: DraftItem[] = [];
  let token: string | undefined;
  for (let i = 0; i < DRAFT_PAGES_MAX; i++) {
    const page = await get<{ drafts: DraftItem[]; next_page_token?: string }>(`/v0/drafts${query({ limit: PAGE_SIZE, send_status: status, page_token: token })}`);
    out.push(...page.drafts);
    token = page.next_page_token;
    if (!token) break;
  }
  return out;
}

/** `send_unknown` messages of every inbox: there is no instance-wide message list. */
async function sendUnknownMessages(): Promise<MessageItem[]> {
  const inboxes = await get<{ inboxes: { inbox_id: string }[] }>(`/v0/inboxes?limit=${PAGE_SIZE}`);
  const pages = await Promise.all(
    inboxes.inboxes.map((i) => get<{ messages: MessageItem[] }>(`/v0/inboxes/${enc(i.inbox_id)}/messages${query({ limit: PAGE_SIZE, labels: ['send_unknown'] })}`)),
  );
  return pages.flatMap((p) => p.messages);
}

async function loadQueues(): Promise<WorkQueues> {
  const [pending, sendUnknown, quarantine] = await Promise.all([
    draftsWithStatus('pending_approval'),
    sendUnknownMessages(),
    get<{ items: QuarantineItem[]; total: number }>(`/v0/owner/quarantine?limit=${PAGE_SIZE}`),
  ]);
  const held = (d: DraftItem) => (d.guard_findings ?? []).length > 0;
  return {
    approvals: pending.filter((d) => !held(d)),
    held: pending.filter(held),
    sendUnknown,
    quarantine: quarantine.items,
    quarantineTotal: quarantine.total,
  };
}

interface State {
  data: WorkQueues | null;
  error: Error | null;
  loading: boolean;
}
let state: State = { data: null, error: null, loading: false };
const listeners = new Set<(s: State) => void>();
let inflight = false;
let again = false;
let timer: number | undefined;

function publish(next: State): void {
  state = next;
  for (const l of listeners) l(state);
}

/** Loads the queues now; a call while a load runs loads once more after it, so no change is missed. */
export function reloadQueues(): void {
  if (inflight) {
    again = true;
    return;
  }
  inflight = true;
  publish({ ...state, loading: true });
  loadQueues().then(
    (data) => publish({ data, error: null, loading: false }),
    (error: Error) => publish({ ...state, error, loading: false }),
  ).finally(() => {
    inflight = false;
    if (again) {
      again = false;
      reloadQueues();
    }
  });
}

function reloadSoon(): void {
  clearTimeout(timer);
  timer = window.setTimeout(reloadQueues, RELOAD_DELAY_MS);
}

/** How many items wait in all queues together. */
export function waitingCount(q: WorkQueues): number {
  return q.approvals.length + q.held.length + q.sendUnknown.length + q.quarantineTotal;
}

export function useWorkQueues(): State & { reload: () => void } {
  const [s, setS] = useState(state);
  useEffect(() => {
    listeners.add(setS);
    if (!state.data && !inflight) reloadQueues();
    else setS(state);
    return () => {
      listeners.delete(setS);
    };
  }, []);
  useLiveEvents(QUEUE_EVENTS, (e) => (e ? reloadSoon() : reloadQueues()));
  return { ...s, reload: reloadQueues };
}
