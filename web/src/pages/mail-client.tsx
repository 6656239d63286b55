/**
 * The mail client (docs/web-app.md "Mail"): a sidebar of inboxes with unread counts, one dense
 * virtualised list of threads over the inboxes the owner chose (or one inbox), a search box with
 * filter chips, and the reading pane beside the list on wide screens (stacked on phones), all
 * driven from the keyboard as well (`?` lists the keys).
 */
import { Fragment } from 'preact';
import { useEffect, useMemo, useRef, useState } from 'preact/hooks';
import { enc, get, patch } from '../api';
import { useLiveEvents } from '../live';
import { navigate } from '../router';
import { ErrorBox, useAction, useLoad, when } from '../ui';
import { ThreadView } from './thread';
import { ARCHIVE_LABEL, chipText, listQuery, matchesChips, parseSearch, removeChip, toggleChip } from './mail-search';
import type { Inbox, ThreadItem } from '../api-types';

/** Pixel height of one list row (two lines); the list positions rows from it, so the CSS uses the same. */
export const ROW_HEIGHT = 44;
/** Rows drawn above and below the visible ones, so fast scrolling shows no gaps. */
const OVERSCAN_ROWS = 12;
/** Threads fetched a page at a time; the next page loads when the list scrolls near its end. */
const PAGE_SIZE = 100;
/** Start loading the next page this many rows before the end. */
const PREFETCH_ROWS = 40;
/** Which inboxes "All inboxes" covers (absent: all of them), kept in this browser only. */
const CHOSEN_STORAGE_KEY = 'svc.mail.inboxes';
const MAX_INBOXES = 100;

export type MailScope = { kind: 'all' } | { kind: 'inbox'; inboxId: string };

function readChosen(): string[] | null {
  try {
    const raw = window.localStorage.getItem(CHOSEN_STORAGE_KEY);
    const value = raw ? (JSON.parse(raw) as unknown) : null;
    return Array.isArray(value) && value.every((v) => typeof v === 'string') ? (value as string[]) : null;
  } catch {
    return null;
  }
}
function writeChosen(ids: string[] | null): void {
  try {
    if (ids === null) window.localStorage.removeItem(CHOSEN_STORAGE_KEY);
    else window.localStorage.setItem(CHOSEN_STORAGE_KEY, JSON.stringify(ids));
  } catch {
    /* storage disabled: the choice lasts for this page */
  }
}

const scopeBase = (scope: MailScope) => (scope.kind === 'all' ? '/mail' : `/inboxes/${enc(scope.inboxId)}`);
export function threadHref(scope: MailScope, t: { inbox_id: string; thread_id: string }, q: string): string {
  const path = scope.kind === 'all' ? `/mail/t/${enc(t.inbox_id)}/${enc(t.thread_id)}` : `/inboxes/${enc(t.inbox_id)}/threads/${enc(t.thread_id)}`;
  return q ? `${path}?q=${encodeURIComponent(q)}` : path;
}
const listHref = (scope: MailScope, q: string) => (q ? `${scopeBase(scope)}?q=${encodeURIComponent(q)}` : scopeBase(scope));

/** Keys a text field keeps for itself. */
function typing(target: EventTarget | null): boolean {
  const el = target as HTMLElement | null;
  return !!el && (el.tagName === 'INPUT' || el.tagName === 'TEXTAREA' || el.tagName === 'SELECT' || el.isContentEditable);
}

const KEYS: [string, string][] = [
  ['j / k', 'next / previous thread (opens it when the reading pane is open)'],
  ['Enter or o', 'open the selected thread'],
  ['u or Escape', 'back to the list'],
  ['e', 'archive'],
  ['#', 'move to trash'],
  ['r / a / f', 'reply / reply all / forward'],
  ['Shift+U', 'mark unread'],
  ['/', 'search'],
  ['c', 'compose'],
  ['?', 'this help'],
];

function HelpDialog({ onClose }: { onClose: () => void }) {
  return (
    <div class="modal-backdrop" onClick={onClose}>
      <div class="modal card" role="dialog" aria-modal="true" aria-label="Keyboard shortcuts" onClick={(e) => e.stopPropagation()}>
        <h2 style={{ marginTop: 0 }}>Keyboard shortcuts</h2>
        <dl class="fields">
          {KEYS.map(([k, what]) => (
            <Fragment key={k}>
              <dt>
                <kbd>{k}</kbd>
              </dt>
              <dd>{what}</dd>
            </Fragment>
          ))}
        </dl>
        <button onClick={onClose} autoFocus>
          Close
        </button>
      </div>
    </div>
  );
}

/** The sidebar: every inbox with its unread threads; "Choose" picks which ones "All inboxes" shows. */
function Sidebar({ scope, inboxes, unread, chosen, onChoose, q }: { scope: MailScope; inboxes: Inbox[]; unread: Map<string, number>; chosen: string[] | null; onChoose: (ids: string[] | null) => void; q: string }) {
  const [choosing, setChoosing] = useState(false);
  const inAll = (id: string) => chosen === null || chosen.includes(id);
  const total = inboxes.filter((i) => inAll(i.inbox_id)).reduce((n, i) => n + (unread.get(i.inbox_id) ?? 0), 0);
  return (
    <nav class="mail-sidebar" aria-label="Inboxes" data-testid="mail-sidebar">
      <a class="button primary compose-button" href={`/compose${scope.kind === 'inbox' ? `?inbox=${enc(scope.inboxId)}` : ''}`}>
        Compose
      </a>
      <a href={listHref({ kind: 'all' }, q)} class={`mailbox${scope.kind === 'all' ? ' active' : ''}`} data-mailbox="all">
        <span>All inboxes</span>
        {total > 0 && <span class="count" aria-label={`${total} unread`}>{total}</span>}
      </a>
      {inboxes.map((i) => {
        const n = unread.get(i.inbox_id) ?? 0;
        return (
          <div class="mailbox-row" key={i.inbox_id}>
            {choosing && (
              <input
                type="checkbox"
                aria-label={`Show ${i.inbox_id} in All inboxes`}
                checked={inAll(i.inbox_id)}
                onChange={(e) => {
                  const all = inboxes.map((x) => x.inbox_id);
                  const current = chosen ?? all;
                  const next = e.currentTarget.checked ? [...current, i.inbox_id] : current.filter((x) => x !== i.inbox_id);
                  onChoose(next.length === all.length ? null : next);
                }}
              />
            )}
            <a
              href={listHref({ kind: 'inbox', inboxId: i.inbox_id }, q)}
              class={`mailbox${scope.kind === 'inbox' && scope.inboxId === i.inbox_id ? ' active' : ''}${inAll(i.inbox_id) ? '' : ' muted'}`}
              data-mailbox={i.inbox_id}
              title={i.inbox_id}
            >
              <span class="mailbox-name">{i.display_name || i.inbox_id}</span>
              {n > 0 && <span class="count" aria-label={`${n} unread`}>{n}</span>}
            </a>
          </div>
        );
      })}
      <div class="mailbox-tools small">
        <button class="linkish" onClick={() => setChoosing(!choosing)} aria-pressed={choosing}>
          {choosing ? 'Done' : 'Choose inboxes'}
        </button>{' '}
        · <a href="/inboxes">Manage</a>
      </div>
    </nav>
  );
}

/** Names, not addresses, as mail clients list them: "Ada <ada@x>" → "Ada"; a bare address stays. */
function people(list: string[]): string {
  if (list.length === 0) return '—';
  return list.map((p) => /^\s*"?([^"<]*?)"?\s*<[^>]*>\s*$/.exec(p)?.[1]?.trim() || p.replace(/^.*<([^>]*)>.*$/, '$1')).join(', ');
}

/** Today: the time; this year: the day; older: the date with its year. */
function shortWhen(ts: string): string {
  const d = new Date(ts);
  const now = new Date();
  if (d.toDateString() === now.toDateString()) return d.toLocaleTimeString(undefined, { hour: '2-digit', minute: '2-digit' });
  if (d.getFullYear() === now.getFullYear()) return d.toLocaleDateString(undefined, { month: 'short', day: 'numeric' });
  return d.toLocaleDateString(undefined, { year: 'numeric', month: 'short', day: 'numeric' });
}

function Row({ t, selected, open, scope, q, index }: { t: ThreadItem; selected: boolean; open: boolean; scope: MailScope; q: string; index: number }) {
  const unread = t.labels.includes('unread');
  const custom = t.labels.filter((l) => !['received', 'sent', 'delivered', 'queued', 'unread', ARCHIVE_LABEL].includes(l));
  return (
    <a
      href={threadHref(scope, t, q)}
      class={`mail-row${unread ? ' unread' : ''}${selected ? ' selected' : ''}${open ? ' open' : ''}`}
      style={{ top: `${index * ROW_HEIGHT}px` }}
      data-thread={t.thread_id}
      data-index={index}
      aria-current={open ? 'true' : undefined}
      role="option"
      aria-selected={selected}
      tabIndex={-1}
    >
      <span class="row-line">
        <span class="row-from" title={t.senders.join(', ')}>
          {people(t.senders.length ? t.senders : t.recipients.map((r) => `to ${r}`))}
          {t.message_count > 1 && <span class="row-count"> {t.message_count}</span>}
        </span>
        {scope.kind === 'all' && <span class="row-inbox">{t.inbox_id.split('@')[0]}</span>}
        {t.attachments.length > 0 && (
          <svg class="row-clip" viewBox="0 0 16 16" role="img" aria-label="has attachments">
            <path d="M11 4.5 5.8 9.7a1.3 1.3 0 0 0 1.8 1.8l5.6-5.6a2.6 2.6 0 0 0-3.7-3.7L3.9 7.8a3.9 3.9 0 0 0 5.5 5.5l4.1-4.1" fill="none" stroke="currentColor" stroke-width="1.4" stroke-linecap="round" />
          </svg>
        )}
        <time class="row-time" dateTime={t.timestamp} title={when(t.timestamp)}>
          {shortWhen(t.timestamp)}
        </time>
      </span>
      <span class="row-line">
        <span class="row-subject">{t.subject || '(no subject)'}</span>
        <span class="row-preview"> — {t.preview}</span>
        {custom.map((l) => (
          <span key={l} class={`label label-${l.replace(/[^a-z_]/gi, '')}`}>
            {l}
          </span>
        ))}
      </span>
    </a>
  );
}

/** The list: absolutely placed rows inside a spacer as tall as every loaded row, drawn only near the viewport. */
function VirtualList({ items, selected, openId, scope, q, onNearEnd, listRef }: { items: ThreadItem[]; selected: number; openId: string | null; scope: MailScope; q: string; onNearEnd: () => void; listRef: { current: HTMLDivElement | null } }) {
  const [scrollTop, setScrollTop] = useState(0);
  const [height, setHeight] = useState(800);
  useEffect(() => {
    const el = listRef.current;
    if (!el) return;
    const measure = () => setHeight(el.clientHeight || 800);
    measure();
    const observer = new ResizeObserver(measure);
    observer.observe(el);
    return () => observer.disconnect();
  }, [listRef]);
  const first = Math.max(0, Math.floor(scrollTop / ROW_HEIGHT) - OVERSCAN_ROWS);
  const last = Math.min(items.length, Math.ceil((scrollTop + height) / ROW_HEIGHT) + OVERSCAN_ROWS);
  useEffect(() => {
    if (last >= items.length - PREFETCH_ROWS) onNearEnd();
  }, [last, items.length, onNearEnd]);
  return (
    <div
      class="mail-list"
      ref={listRef}
      role="listbox"
      aria-label="Threads"
      data-testid="threads"
      data-count={items.length}
      onScroll={(e) => setScrollTop(e.currentTarget.scrollTop)}
    >
      <div class="mail-list-spacer" style={{ height: `${items.length * ROW_HEIGHT}px` }}>
        {items.slice(first, last).map((t, i) => (
          <Row key={t.thread_id} t={t} index={first + i} selected={first + i === selected} open={t.thread_id === openId} scope={scope} q={q} />
        ))}
      </div>
    </div>
  );
}

interface ListState {
  items: ThreadItem[];
  next: string | undefined;
  loading: boolean;
  error: Error | null;
  loaded: boolean;
}

/** A transient note with an Undo (after archive or trash). */
interface Toast {
  text: string;
  undo?: () => void;
}

export function MailPage({ scope, openThread, search }: { scope: MailScope; openThread?: { inboxId: string; threadId: string }; search: URLSearchParams }) {
  const q = search.get('q') ?? '';
  const parsed = useMemo(() => parseSearch(q), [q]);
  const [chosen, setChosenState] = useState<string[] | null>(readChosen);
  const setChosen = (ids: string[] | null) => {
    writeChosen(ids);
    setChosenState(ids);
  };
  const inboxes = useLoad(() => get<{ inboxes: Inbox[] }>(`/v0/inboxes?limit=${MAX_INBOXES}`), []);
  const unread = useLoad(() => get<{ inboxes: { inbox_id: string; unread_threads: number }[] }>('/v0/owner/mail/unread'), []);
  const unreadMap = useMemo(() => new Map((unread.data?.inboxes ?? []).map((u) => [u.inbox_id, u.unread_threads])), [unread.data]);
  const inboxIds = scope.kind === 'inbox' ? [scope.inboxId] : (chosen ?? undefined);
  const scopeKey = `${scope.kind === 'inbox' ? scope.inboxId : `all:${(chosen ?? []).join(',')}`}|${q}`;

  const [list, setList] = useState<ListState>({ items: [], next: undefined, loading: true, error: null, loaded: false });
  const [selected, setSelectedState] = useState(0);
  // Keys read the selection from here: a held-down key repeats faster than the list draws, and each
  // press must move on from the one before it, not from the selection of the last render.
  const selectedNow = useRef(0);
  const setSelected = (i: number) => {
    selectedNow.current = i;
    setSelectedState(i);
  };
  const [help, setHelp] = useState(false);
  const [toast, setToast] = useState<Toast | null>(null);
  const [draft, setDraft] = useState(q);
  const searchRef = useRef<HTMLInputElement | null>(null);
  const listRef = useRef<HTMLDivElement | null>(null);
  const loads = useRef(0);
  const action = useAction();
  useEffect(() => setDraft(q), [q]);

  const fetchPage = async (token?: string) => {
    const path = parsed.words
      ? `/v0/owner/mail/threads/search${listQueryForSearch(parsed.words, inboxIds, token)}`
      : `/v0/owner/mail/threads${listQuery(parsed, inboxIds, token, PAGE_SIZE)}`;
    const page = await get<{ threads: ThreadItem[]; next_page_token?: string }>(path);
    return { threads: parsed.words ? page.threads.filter((t) => matchesChips(t, parsed.chips)) : page.threads, next: page.next_page_token };
  };

  /** Loads the first page again; `keep` keeps pages already loaded below it (a live update). */
  const reload = (keep: boolean) => {
    const load = ++loads.current;
    setList((l) => ({ ...l, loading: true }));
    fetchPage().then(
      (page) => {
        if (load !== loads.current) return;
        setList((l) => {
          if (!keep || l.items.length <= page.threads.length) return { items: page.threads, next: page.next, loading: false, error: null, loaded: true };
          const fresh = new Set(page.threads.map((t) => t.thread_id));
          const rest = l.items.slice(page.threads.length).filter((t) => !fresh.has(t.thread_id));
          return { items: [...page.threads, ...rest], next: l.next, loading: false, error: null, loaded: true };
        });
      },
      (e: Error) => load === loads.current && setList((l) => ({ ...l, loading: false, error: e, loaded: true })),
    );
  };
  useEffect(() => {
    setSelected(0);
    setList({ items: [], next: undefined, loading: true, error: null, loaded: false });
    listRef.current?.scrollTo({ top: 0 });
    reload(false);
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [scopeKey]);

  const loadMore = () => {
    if (list.loading || !list.next) return;
    const load = loads.current;
    const token = list.next;
    setList((l) => ({ ...l, loading: true }));
    fetchPage(token).then(
      (page) => {
        if (load !== loads.current) return;
        setList((l) => {
          const have = new Set(l.items.map((t) => t.thread_id));
          return { items: [...l.items, ...page.threads.filter((t) => !have.has(t.thread_id))], next: page.next, loading: false, error: null, loaded: true };
        });
      },
      (e: Error) => setList((l) => ({ ...l, loading: false, error: e })),
    );
  };

  useLiveEvents(['message.', 'draft.'], (e) => {
    unread.reload();
    if (!e) return reload(true);
    const m = (e.message ?? e.send ?? e.delivery ?? e.bounce ?? e.failure ?? e.outcome ?? e.draft) as { inbox_id?: string } | undefined;
    if (!m?.inbox_id || !inboxIds || inboxIds.includes(m.inbox_id)) reload(true);
  }, [scopeKey]);

  const items = list.items;
  const openId = openThread?.threadId ?? null;
  // The open thread's row is the selection (when it is listed).
  useEffect(() => {
    if (!openId) return;
    const i = items.findIndex((t) => t.thread_id === openId);
    if (i >= 0) setSelected(i);
  }, [openId, items]);

  const scrollIntoView = (i: number) => {
    const el = listRef.current;
    if (!el) return;
    const top = i * ROW_HEIGHT;
    if (top < el.scrollTop) el.scrollTop = top;
    else if (top + ROW_HEIGHT > el.scrollTop + el.clientHeight) el.scrollTop = top + ROW_HEIGHT - el.clientHeight;
  };
  const open = (i: number) => {
    const t = items[i];
    if (t) navigate(threadHref(scope, t, q), !!openId);
  };
  const close = () => navigate(listHref(scope, q));
  const move = (delta: number) => {
    if (items.length === 0) return;
    const i = Math.min(items.length - 1, Math.max(0, selectedNow.current + delta));
    setSelected(i);
    scrollIntoView(i);
    if (i >= items.length - PREFETCH_ROWS) loadMore();
    // With the reading pane open, moving reads the next thread, as in Gmail's split view.
    if (openId && wide()) open(i);
  };

  /**
   * Takes the thread out of this view (archive, trash, delete) and selects the one after it. A
   * page asked for before the change (a live update in flight) would bring the thread back, so
   * the first page is asked for again: `reload` drops every answer to an earlier request.
   */
  const removeFromList = (threadId: string) => {
    const i = items.findIndex((t) => t.thread_id === threadId);
    setList((l) => ({ ...l, items: l.items.filter((t) => t.thread_id !== threadId) }));
    reload(true);
    unread.reload();
    const next = items.filter((t) => t.thread_id !== threadId)[Math.max(0, i)] as ThreadItem | undefined;
    if (openId === threadId) {
      if (next && wide()) navigate(threadHref(scope, next, q), true);
      else navigate(listHref(scope, q), true);
    }
  };
  const moveThread = (t: { inbox_id: string; thread_id: string }, label: string, done: string) =>
    action.run(async () => {
      const url = `/v0/inboxes/${enc(t.inbox_id)}/threads/${enc(t.thread_id)}`;
      await patch(url, { add_labels: [label] });
      removeFromList(t.thread_id);
      setToast({
        text: done,
        undo: () =>
          void action.run(async () => {
            await patch(url, { remove_labels: [label] });
            setToast(null);
            reload(true);
          }),
      });
    });

  const current = (): { inbox_id: string; thread_id: string } | undefined => (openThread ? { inbox_id: openThread.inboxId, thread_id: openThread.threadId } : items[selectedNow.current]);

  // The keys act on this render's state: the handler is replaced at every render, and the one
  // listener, added once, calls the latest (an effect re-adding it would run only after a paint,
  // so a key pressed in between would act on the state before the last one).
  const onKey = useRef<(e: KeyboardEvent) => void>(() => {});
  onKey.current = (e: KeyboardEvent) => {
    if (e.ctrlKey || e.metaKey || e.altKey) return;
    if (typing(e.target)) {
      if (e.key === 'Escape') (e.target as HTMLElement).blur();
      return;
    }
    if (help) {
      if (e.key === 'Escape' || e.key === '?') setHelp(false);
      return;
    }
    const t = current();
    const compose = (mode: string) => {
      const m = document.querySelector<HTMLAnchorElement>(`[data-testid="reader"] .reader-tools a[title^="${mode}"]`);
      if (m) navigate(m.getAttribute('href')!);
    };
    switch (e.key) {
      case 'j':
      case 'ArrowDown':
        move(1);
        break;
      case 'k':
      case 'ArrowUp':
        move(-1);
        break;
      case 'Enter':
      case 'o':
        open(selectedNow.current);
        break;
      case 'u':
      case 'Escape':
        if (openId) close();
        break;
      case 'e':
        if (t) void moveThread(t, ARCHIVE_LABEL, 'Archived.');
        break;
      case '#':
        if (t) void moveThread(t, 'trash', 'Moved to trash.');
        break;
      case 'U':
        if (t) void action.run(async () => (await patch(`/v0/inboxes/${enc(t.inbox_id)}/threads/${enc(t.thread_id)}`, { add_labels: ['unread'] }), reload(true), unread.reload()));
        break;
      case 'r':
        compose('Reply (');
        break;
      case 'a':
        compose('Reply all');
        break;
      case 'f':
        compose('Forward');
        break;
      case 'c':
        navigate(`/compose${scope.kind === 'inbox' ? `?inbox=${enc(scope.inboxId)}` : ''}`);
        break;
      case '/':
        searchRef.current?.focus();
        searchRef.current?.select();
        break;
      case '?':
        setHelp(true);
        break;
      default:
        return;
    }
    e.preventDefault();
  };
  useEffect(() => {
    const listener = (e: KeyboardEvent) => onKey.current(e);
    window.addEventListener('keydown', listener);
    return () => window.removeEventListener('keydown', listener);
  }, []);

  useEffect(() => {
    document.title = `${scope.kind === 'all' ? 'Mail' : scope.inboxId} · svc`;
  }, [scope]);

  const submitSearch = (text: string) => navigate(listHref(scope, text.trim()));
  const title = scope.kind === 'all' ? 'All inboxes' : scope.inboxId;
  const allInboxes = inboxes.data?.inboxes ?? [];

  return (
    <section class={`mail${openId ? ' reading' : ''}`} data-testid="mail">
      <Sidebar scope={scope} inboxes={allInboxes} unread={unreadMap} chosen={chosen} onChoose={setChosen} q={q} />
      <div class="mail-main">
        <header class="mail-head">
          <h1 class="mail-title">{title}</h1>
          <SearchBox draft={draft} setDraft={setDraft} submit={submitSearch} searchRef={searchRef} />
          <button class="small help-button" aria-label="Keyboard shortcuts" title="Keyboard shortcuts (?)" onClick={() => setHelp(true)}>
            ?
          </button>
        </header>
        <Chips q={q} submit={submitSearch} />
        <ErrorBox error={list.error ?? inboxes.error ?? action.error} />
        {list.loaded && items.length === 0 && !list.error && (
          <p class="muted mail-empty">
            {q ? 'No threads match.' : allInboxes.length === 0 && inboxes.data ? (
              <>
                No inboxes yet. <a href="/inboxes">Create one</a>.
              </>
            ) : (
              'No threads yet.'
            )}
          </p>
        )}
        <VirtualList items={items} selected={selected} openId={openId} scope={scope} q={q} onNearEnd={loadMore} listRef={listRef} />
        {list.loading && <div class="muted small mail-loading">Loading…</div>}
      </div>
      <div class="mail-pane">
        {openThread ? (
          <ThreadView
            key={openThread.threadId}
            inboxId={openThread.inboxId}
            threadId={openThread.threadId}
            onBack={close}
            onLabels={() => {
              unread.reload();
              reload(true);
            }}
            onGone={(how) => {
              removeFromList(openThread.threadId);
              setToast({ text: how === 'archived' ? 'Archived.' : how === 'trashed' ? 'Moved to trash.' : 'Deleted.' });
            }}
          />
        ) : (
          <div class="mail-pane-empty muted">
            {items.length > 0 ? 'Select a thread to read it. Press ? for keyboard shortcuts.' : ''}
          </div>
        )}
      </div>
      {toast && <ToastBar toast={toast} onClose={() => setToast(null)} />}
      {help && <HelpDialog onClose={() => setHelp(false)} />}
    </section>
  );
}

const listQueryForSearch = (words: string, inboxIds: string[] | undefined, token?: string) => {
  const params = new URLSearchParams({ q: words, limit: String(PAGE_SIZE) });
  for (const id of inboxIds ?? []) params.append('inbox_ids', id);
  if (token) params.set('page_token', token);
  return `?${params.toString()}`;
};

/** The reading pane sits beside the list (else it replaces it): the same breakpoint as the CSS. */
const wide = () => window.matchMedia('(min-width: 900px)').matches;

function SearchBox({ draft, setDraft, submit, searchRef }: { draft: string; setDraft: (s: string) => void; submit: (s: string) => void; searchRef: { current: HTMLInputElement | null } }) {
  const [advanced, setAdvanced] = useState(false);
  return (
    <form
      class="mail-search"
      role="search"
      onSubmit={(e) => {
        e.preventDefault();
        submit(draft);
      }}
    >
      <input
        ref={searchRef}
        type="search"
        name="q"
        aria-label="Search mail"
        placeholder="Search mail   from: to: subject: label: has:attachment is:unread"
        value={draft}
        onInput={(e) => setDraft(e.currentTarget.value)}
      />
      <button class="small" type="button" aria-expanded={advanced} aria-label="Search options" onClick={() => setAdvanced(!advanced)}>
        ▾
      </button>
      {advanced && <AdvancedSearch text={draft} onApply={(text) => (setAdvanced(false), submit(text))} />}
    </form>
  );
}

/** The advanced options, folded away: each field becomes a chip in the one search box. */
function AdvancedSearch({ text, onApply }: { text: string; onApply: (text: string) => void }) {
  const parsed = parseSearch(text);
  const first = (key: string) => parsed.chips.find((c) => c.key === key)?.value ?? '';
  return (
    <div class="card advanced-search" data-testid="advanced-search">
      <div class="row">
        {(['from', 'to', 'subject', 'label'] as const).map((k) => (
          <label key={k}>
            {k[0].toUpperCase() + k.slice(1)}
            <input name={`adv-${k}`} defaultValue={first(k)} />
          </label>
        ))}
        <label>
          Words
          <input name="adv-words" defaultValue={parsed.words} />
        </label>
      </div>
      <div class="row small">
        <label class="check">
          <input type="checkbox" name="adv-attachment" defaultChecked={parsed.chips.some((c) => c.key === 'has')} /> has attachment
        </label>
        <label class="check">
          <input type="checkbox" name="adv-unread" defaultChecked={parsed.chips.some((c) => c.key === 'is' && c.value === 'unread')} /> unread
        </label>
        <label class="check">
          In
          <select name="adv-in" defaultValue={first('in')} style={{ width: 'auto' }}>
            <option value="">inbox</option>
            <option value="archive">archive</option>
            <option value="trash">trash</option>
            <option value="spam">spam</option>
          </select>
        </label>
        <button
          type="button"
          class="primary small"
          onClick={(e) => {
            const box = (e.currentTarget as HTMLElement).closest('.advanced-search')!;
            const v = (n: string) => (box.querySelector<HTMLInputElement>(`[name="adv-${n}"]`)?.value ?? '').trim();
            const checked = (n: string) => box.querySelector<HTMLInputElement>(`[name="adv-${n}"]`)?.checked ?? false;
            const chips = [
              ...(['from', 'to', 'subject', 'label'] as const).filter((k) => v(k)).map((k) => chipText({ key: k, value: v(k) })),
              ...(checked('attachment') ? ['has:attachment'] : []),
              ...(checked('unread') ? ['is:unread'] : []),
              ...(v('in') ? [`in:${v('in')}`] : []),
            ];
            onApply([...chips, v('words')].filter(Boolean).join(' '));
          }}
        >
          Search
        </button>
      </div>
    </div>
  );
}

/** The query's chips (each removable) and the quick filters. */
function Chips({ q, submit }: { q: string; submit: (text: string) => void }) {
  const parsed = parseSearch(q);
  const quick: [string, { key: 'is' | 'has'; value: string }][] = [
    ['Unread', { key: 'is', value: 'unread' }],
    ['Has attachment', { key: 'has', value: 'attachment' }],
  ];
  return (
    <div class="chips" data-testid="chips">
      {quick.map(([label, chip]) => {
        const on = parsed.chips.some((c) => c.key === chip.key && c.value.toLowerCase() === chip.value);
        return (
          <button key={label} class={`chip quick${on ? ' on' : ''}`} aria-pressed={on} onClick={() => submit(toggleChip(q, chip))}>
            {label}
          </button>
        );
      })}
      {parsed.chips
        .map((c, i) => [c, i] as const)
        .filter(([c]) => !quick.some(([, k]) => k.key === c.key && k.value === c.value.toLowerCase()))
        .map(([c, i]) => (
          <span class="chip" key={`${i}${chipText(c)}`} data-chip={chipText(c)}>
            {chipText(c)}
            <button class="chip-x" aria-label={`Remove filter ${chipText(c)}`} onClick={() => submit(removeChip(q, i))}>
              ×
            </button>
          </span>
        ))}
      {parsed.words && parsed.chips.length > 0 && <span class="muted small">Full-text results, narrowed by the filters.</span>}
    </div>
  );
}

function ToastBar({ toast, onClose }: { toast: Toast; onClose: () => void }) {
  useEffect(() => {
    const timer = setTimeout(onClose, 8000);
    return () => clearTimeout(timer);
  }, [toast]);
  return (
    <div class="toast" role="status">
      {toast.text}
      {toast.undo && (
        <button class="small linkish" onClick={toast.undo}>
          Undo
        </button>
      )}
    </div>
  );
}
