/** Mail: inboxes (create, pause, delete), thread lists with filters and search, live updates. */
import { useRef, useState } from 'preact/hooks';
import { del, enc, get, patch, post, query } from '../api';
import { useLiveEvents } from '../live';
import { navigate } from '../router';
import { ErrorBox, Labels, Loading, Page, confirmed, formValues, onSubmitWith, useAction, useLoad, when } from '../ui';
import type { CreateInboxBody, Inbox, ThreadItem, UpdateInboxBody } from '../api-types';

interface Page<T> {
  count: number;
  next_page_token?: string;
  [key: string]: unknown;
  items?: T[];
}

export const inboxPath = (inboxId: string) => `/inboxes/${enc(inboxId)}`;

export function InboxesPage() {
  const inboxes = useLoad(() => get<{ inboxes: Inbox[] }>('/v0/inboxes?limit=100'), []);
  const action = useAction();
  const create = useAction();
  return (
    <Page title="Inboxes">
      <form
        class="card row"
        onSubmit={onSubmitWith(create, async (v, form) => {
          await post('/v0/inboxes', { username: v.username || undefined, domain: v.domain, display_name: v.display_name || undefined } satisfies CreateInboxBody);
          form.reset();
          inboxes.reload();
        })}
      >
        <label>
          Username
          <input name="username" placeholder="random when empty" />
        </label>
        <label>
          Domain
          <input name="domain" required placeholder="example.com" />
        </label>
        <label>
          Display name
          <input name="display_name" />
        </label>
        <button class="primary" disabled={create.busy}>
          Create inbox
        </button>
      </form>
      <ErrorBox error={create.error ?? action.error} />
      <Loading loaded={inboxes} />
      {inboxes.data && inboxes.data.inboxes.length === 0 && <p class="muted">No inboxes yet. Create one above.</p>}
      <ul class="items" data-testid="inboxes">
        {inboxes.data?.inboxes.map((i) => (
          <li key={i.inbox_id} data-inbox={i.inbox_id}>
            <div class="item-line" style={{ padding: '0.6rem 0.8rem', alignItems: 'center' }}>
              <a href={inboxPath(i.inbox_id)} class="who">
                {i.display_name ? `${i.display_name} <${i.inbox_id}>` : i.inbox_id}
              </a>
              <span class="actions">
                {i.status === 'paused' && <span class="badge warn">paused</span>}
                <button
                  class="small"
                  onClick={() =>
                    void action.run(async () => {
                      await patch(`/v0/inboxes/${enc(i.inbox_id)}`, { status: i.status === 'active' ? 'paused' : 'active' } satisfies UpdateInboxBody);
                      inboxes.reload();
                    })
                  }
                >
                  {i.status === 'active' ? 'Pause' : 'Resume'}
                </button>
                <button
                  class="small danger"
                  onClick={() =>
                    confirmed(`Delete ${i.inbox_id} and all its mail? This cannot be undone.`) &&
                    void action.run(async () => {
                      await del(`/v0/inboxes/${enc(i.inbox_id)}`);
                      inboxes.reload();
                    })
                  }
                >
                  Delete
                </button>
              </span>
            </div>
          </li>
        ))}
      </ul>
    </Page>
  );
}

const HIDDEN = ['spam', 'blocked', 'unauthenticated', 'trash'] as const;

export function ThreadsPage({ inboxId, search }: { inboxId: string; search: URLSearchParams }) {
  const q = search.get('q') ?? '';
  const label = search.get('label') ?? '';
  const sender = search.get('sender') ?? '';
  const subject = search.get('subject') ?? '';
  const include = HIDDEN.filter((h) => search.get(`include_${h}`) === 'true');
  const [pages, setPages] = useState<ThreadItem[][]>([]);
  const [next, setNext] = useState<string | undefined>();
  const base = `/v0/inboxes/${enc(inboxId)}/threads`;
  const key = search.toString();

  const fetchPage = (token?: string) => {
    const common = { limit: 25, page_token: token };
    const url = q
      ? `${base}/search${query({ ...common, q })}`
      : `${base}${query({ ...common, labels: label ? [label] : undefined, senders: sender ? [sender] : undefined, subject: subject ? [subject] : undefined, ...Object.fromEntries(include.map((h) => [`include_${h}`, true])) })}`;
    return get<Page<ThreadItem> & { threads: ThreadItem[] }>(url);
  };
  // Only the newest load may set the list: a reload started for earlier filters (a live event
  // arrives while the owner searches) can answer after the search and must not replace it.
  const loads = useRef(0);
  const first = useLoad(async () => {
    const load = ++loads.current;
    const page = await fetchPage();
    if (load === loads.current) {
      setPages([page.threads]);
      setNext(page.next_page_token);
    }
    return page;
  }, [inboxId, key]);
  const more = useAction();

  // New mail and state changes in this inbox show up without a reload.
  useLiveEvents(['message.', 'draft.'], (e) => {
    if (!e) return first.reload();
    const m = (e.message ?? e.send ?? e.delivery ?? e.bounce ?? e.failure ?? e.outcome ?? e.draft) as { inbox_id?: string } | undefined;
    if (!m || m.inbox_id === inboxId) first.reload();
  }, [inboxId]);

  const setFilters = (form: HTMLFormElement) => {
    const v = formValues(form);
    const params = new URLSearchParams();
    for (const k of ['q', 'label', 'sender', 'subject']) if (v[k]) params.set(k, v[k]);
    for (const h of HIDDEN) if (v[`include_${h}`]) params.set(`include_${h}`, 'true');
    const s = params.toString();
    navigate(`${inboxPath(inboxId)}${s ? `?${s}` : ''}`);
  };

  const threads = pages.flat();
  return (
    <Page
      title={inboxId}
      actions={
        <>
          <a class="button primary" href={`/compose${query({ inbox: inboxId })}`}>
            Compose
          </a>
          <a class="button" href="/inboxes">
            All inboxes
          </a>
        </>
      }
    >
      <form
        class="card"
        key={key}
        onSubmit={(e) => {
          e.preventDefault();
          setFilters(e.currentTarget);
        }}
      >
        <div class="row">
          <label>
            Search
            <input name="q" type="search" defaultValue={q} placeholder="words in the mail" />
          </label>
          <label>
            Label
            <input name="label" defaultValue={label} placeholder="e.g. unread" />
          </label>
          <label>
            Sender
            <input name="sender" defaultValue={sender} />
          </label>
          <label>
            Subject
            <input name="subject" defaultValue={subject} />
          </label>
          <button>Apply</button>
        </div>
        <div class="row small">
          {HIDDEN.map((h) => (
            <label class="check" key={h}>
              <input type="checkbox" name={`include_${h}`} defaultChecked={include.includes(h)} /> include {h}
            </label>
          ))}
        </div>
      </form>
      <Loading loaded={first} />
      {first.data && threads.length === 0 && <p class="muted">No threads{q || label || sender || subject ? ' match' : ' yet'}.</p>}
      <ul class="items" data-testid="threads">
        {threads.map((t) => (
          <li key={t.thread_id} class={t.labels.includes('unread') ? 'unread' : ''} data-thread={t.thread_id}>
            <a class="item" href={`${inboxPath(inboxId)}/threads/${enc(t.thread_id)}`}>
              <div class="item-line">
                <span class="who">{t.senders.join(', ') || '—'}</span>
                <span class="muted small">
                  {t.message_count > 1 && `${t.message_count} · `}
                  {when(t.timestamp)}
                </span>
              </div>
              <div class="subject">{t.subject || '(no subject)'}</div>
              <div class="item-sub">{t.preview}</div>
              <Labels labels={t.labels} />
            </a>
          </li>
        ))}
      </ul>
      <ErrorBox error={more.error} />
      {next && (
        <p>
          <button
            disabled={more.busy}
            onClick={() =>
              void more.run(async () => {
                const load = loads.current;
                const page = await fetchPage(next);
                if (load !== loads.current) return; // the filters changed meanwhile
                setPages((p) => [...p, page.threads]);
                setNext(page.next_page_token);
              })
            }
          >
            More
          </button>
        </p>
      )}
    </Page>
  );
}
