/**
 * One thread, as the reading pane shows it: every message, mail HTML in a sandboxed frame (no
 * scripts, no same-origin, its own CSP with remote images off until the owner allows them), what
 * svc found in it (codes and links, manipulation findings), headers and raw source, attachments
 * with previews where safe, labels, archive/trash/delete, and reply / reply all / forward.
 */
import { useEffect, useState } from 'preact/hooks';
import { del, enc, get, patch } from '../api';
import { useLiveEvents } from '../live';
import { ErrorBox, Loading, confirmed, useAction, useLoad } from '../ui';
import { MessageView, composeHref } from './mail-message';
import { ARCHIVE_LABEL } from './mail-search';
import type { Message, Thread } from '../api-types';

/** Labels the service manages; edits that touch them are refused (spec §2.3). */
export const SYSTEM_LABELS = new Set(['received', 'queued', 'sent', 'send_unknown', 'failed', 'delivered', 'bounced', 'complained', 'rejected', 'deferred']);

/** Anything that would load from the network: src/srcset/background attributes and CSS url(). */
const REMOTE_CONTENT = /(\b(src|srcset|background|poster)\s*=\s*["']?\s*(https?:)?\/\/)|(url\(\s*["']?\s*(https?:)?\/\/)/i;

export function hasRemoteContent(html: string): boolean {
  return REMOTE_CONTENT.test(html);
}

/**
 * The frame's document. `sandbox=""` already forbids scripts, forms, popups and same-origin
 * access; the CSP meta (first thing in <head>, so the mail cannot precede it) additionally keeps
 * every network fetch off: images only from data: unless the owner allowed remote images.
 */
export function mailDocument(html: string, allowRemote: boolean): string {
  const img = allowRemote ? "img-src data: https: http:" : 'img-src data:';
  const csp = `default-src 'none'; style-src 'unsafe-inline'; font-src data:; ${img}; media-src 'none'; form-action 'none'`;
  return `<!doctype html><html><head><meta http-equiv="Content-Security-Policy" content="${csp}"><meta name="referrer" content="no-referrer"><style>body{font-family:system-ui,sans-serif;margin:8px;overflow-wrap:anywhere}img{max-width:100%;height:auto}</style></head><body>${html}</body></html>`;
}

export function MailBody({ message }: { message: Message }) {
  const [allow, setAllow] = useState(false);
  const html = message.html;
  if (!html) return <pre class="text">{message.text ?? ''}</pre>;
  const remote = hasRemoteContent(html);
  return (
    <div>
      {remote && !allow && (
        <div class="notice small" data-testid="remote-blocked">
          Remote images are blocked, so the sender cannot see that you opened this.{' '}
          <button class="small" onClick={() => setAllow(true)}>
            Load remote images
          </button>
        </div>
      )}
      <iframe class="mail" sandbox="" referrerpolicy="no-referrer" title={`Message ${message.subject ?? ''}`} srcdoc={mailDocument(html, allow)} />
    </div>
  );
}

/** The advisory manipulation verdict (docs/manipulation.md): why this mail may try to steer an agent. */
export function ManipulationWarning({ findings }: { findings: { reason: string; detail: string }[] }) {
  return (
    <div class="warning" role="note" data-testid="manipulation-warning">
      <strong>This message may try to manipulate an AI agent.</strong> It was delivered as usual; svc only warns.
      <ul>
        {findings.map((f) => (
          <li key={f.reason}>
            <code>{f.reason}</code>: {f.detail}
          </li>
        ))}
      </ul>
    </div>
  );
}

/**
 * The thread in the reading pane. `onGone` runs when the thread left the current view (archived,
 * trashed or deleted); `onBack` closes the pane (phones, `u`, Escape).
 */
export function ThreadView({
  inboxId,
  threadId,
  onBack,
  onGone,
  onLabels,
}: {
  inboxId: string;
  threadId: string;
  onBack: () => void;
  onGone: (how: 'archived' | 'trashed' | 'deleted') => void;
  /** The thread's labels changed here (read, unread, a label added): the list and its counts follow. */
  onLabels: () => void;
}) {
  const url = `/v0/inboxes/${enc(inboxId)}/threads/${enc(threadId)}`;
  const thread = useLoad(() => get<Thread>(url), [url]);
  const action = useAction();
  const [newLabel, setNewLabel] = useState('');

  // Opening a thread reads it: drop `unread` once, the way mail clients do.
  useEffect(() => {
    if (thread.data?.labels.includes('unread'))
      void patch(url, { remove_labels: ['unread'] }).then(() => {
        thread.reload();
        onLabels();
      }, () => undefined);
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [thread.data?.thread_id]);

  useLiveEvents(['message.'], (e) => {
    if (!e) return thread.reload();
    const m = (e.message ?? e.send ?? e.delivery ?? e.bounce ?? e.failure ?? e.outcome ?? e.complaint ?? e.reject) as { thread_id?: string } | undefined;
    if (m?.thread_id === threadId) thread.reload();
  }, [threadId]);

  const editLabels = (body: { add_labels?: string[]; remove_labels?: string[] }) =>
    action.run(async () => {
      await patch(url, body);
      thread.reload();
      onLabels();
    });

  const t = thread.data;
  const last: Message | undefined = t?.messages[t.messages.length - 1];
  return (
    <article class="reader" data-testid="reader" data-thread={threadId} aria-label="Reading pane">
      <header class="reader-head">
        <button class="small reader-back" onClick={onBack} aria-label="Back to the list" title="Back to the list (u)">
          ←
        </button>
        <h1 class="reader-subject">{t ? t.subject || '(no subject)' : ' '}</h1>
      </header>
      <div class="reader-tools actions">
        {last && (
          <>
            <a class="button small" href={composeHref(last, 'reply')} title="Reply (r)">
              Reply
            </a>
            <a class="button small" href={composeHref(last, 'reply-all')} title="Reply all (a)">
              Reply all
            </a>
            <a class="button small" href={composeHref(last, 'forward')} title="Forward (f)">
              Forward
            </a>
          </>
        )}
        <button class="small" title="Archive (e)" onClick={() => void action.run(async () => (await patch(url, { add_labels: [ARCHIVE_LABEL] }), onGone('archived')))}>
          Archive
        </button>
        <button class="small" title="Move to trash (#)" onClick={() => void action.run(async () => (await patch(url, { add_labels: ['trash'] }), onGone('trashed')))}>
          Trash
        </button>
        {t && !t.labels.includes('unread') && (
          <button class="small" onClick={() => void editLabels({ add_labels: ['unread'] })}>
            Mark unread
          </button>
        )}
        <button
          class="small danger"
          onClick={() =>
            confirmed('Delete the whole thread? This cannot be undone.') &&
            void action.run(async () => {
              await del(url);
              onGone('deleted');
            })
          }
        >
          Delete thread
        </button>
      </div>
      <Loading loaded={thread} />
      <ErrorBox error={action.error} />
      {t && (
        <>
          <div class="reader-labels">
            <div class="labels" data-testid="thread-labels">
              {t.labels.map((l) => (
                <span class={`label label-${l.replace(/[^a-z_]/gi, '')}`} key={l}>
                  {l}
                  {!SYSTEM_LABELS.has(l) && (
                    <button class="label-x" aria-label={`Remove label ${l}`} onClick={() => void editLabels({ remove_labels: [l] })}>
                      ×
                    </button>
                  )}
                </span>
              ))}
            </div>
            <form
              class="label-add"
              onSubmit={(e) => {
                e.preventDefault();
                if (newLabel.trim()) void editLabels({ add_labels: [newLabel.trim()] }).then((ok) => ok && setNewLabel(''));
              }}
            >
              <input aria-label="New label" placeholder="add a label" value={newLabel} onInput={(e) => setNewLabel(e.currentTarget.value)} />
              <button class="small">Add label</button>
            </form>
          </div>
          {t.messages.map((m, i) => (
            <MessageView key={m.message_id} message={m} expanded={i === t.messages.length - 1 || m.labels.includes('unread')} onChanged={() => (t.messages.length > 1 ? thread.reload() : onGone('deleted'))} />
          ))}
        </>
      )}
    </article>
  );
}
