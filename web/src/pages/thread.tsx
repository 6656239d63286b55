/**
 * One thread: every message, mail HTML in a sandboxed frame (no scripts, no same-origin, its own
 * CSP with remote images off until the owner allows them), attachments, labels, delete, and the
 * way into reply / reply all / forward.
 */
import { useEffect, useState } from 'preact/hooks';
import { del, enc, get, patch, query } from '../api';
import { useLiveEvents } from '../live';
import { navigate } from '../router';
import { ErrorBox, Labels, Loading, Page, bytes, confirmed, useAction, useLoad, when } from '../ui';
import { inboxPath } from './mail';
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

function MailBody({ message }: { message: Message }) {
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

async function download(inboxId: string, messageId: string, attachmentId: string): Promise<void> {
  const meta = await get<{ download_url: string }>(`/v0/inboxes/${enc(inboxId)}/messages/${enc(messageId)}/attachments/${enc(attachmentId)}`);
  const a = document.createElement('a');
  a.href = meta.download_url;
  a.download = '';
  document.body.appendChild(a);
  a.click();
  a.remove();
}

/** The advisory manipulation verdict (docs/manipulation.md): why this mail may try to steer an agent. */
function ManipulationWarning({ findings }: { findings: { reason: string; detail: string }[] }) {
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

function MessageView({ message, onChanged }: { message: Message; onChanged: () => void }) {
  const action = useAction();
  const base = `/v0/inboxes/${enc(message.inbox_id)}/messages/${enc(message.message_id)}`;
  const compose = (mode: string) => `/compose${query({ inbox: message.inbox_id, mode, message: message.message_id })}`;
  return (
    <article class="message" data-message={message.message_id}>
      <div class="message-head">
        <div>
          <strong>{message.from}</strong>
          <div class="muted small">
            to {message.to.join(', ')}
            {message.cc && message.cc.length > 0 && `, cc ${message.cc.join(', ')}`}
          </div>
        </div>
        <div class="muted small">{when(message.timestamp)}</div>
      </div>
      <Labels labels={message.labels} />
      {message.send_reason && <div class="muted small">Send status: {message.send_status} ({message.send_reason})</div>}
      {message.manipulation?.suspicious && <ManipulationWarning findings={message.manipulation.findings} />}
      <MailBody message={message} />
      {message.attachments.length > 0 && (
        <div class="attachments">
          {message.attachments.map((a) => (
            <button key={a.attachment_id} class="small" onClick={() => void action.run(() => download(message.inbox_id, message.message_id, a.attachment_id))}>
              ⤓ {a.filename ?? a.attachment_id} ({bytes(a.size)})
            </button>
          ))}
        </div>
      )}
      <div class="actions" style={{ marginTop: '0.6rem' }}>
        <a class="button small" href={compose('reply')}>
          Reply
        </a>
        <a class="button small" href={compose('reply-all')}>
          Reply all
        </a>
        <a class="button small" href={compose('forward')}>
          Forward
        </a>
        <button
          class="small danger"
          onClick={() =>
            confirmed('Delete this message? This cannot be undone.') &&
            void action.run(async () => {
              await del(base);
              onChanged();
            })
          }
        >
          Delete message
        </button>
      </div>
      <ErrorBox error={action.error} />
    </article>
  );
}

export function ThreadPage({ inboxId, threadId }: { inboxId: string; threadId: string }) {
  const url = `/v0/inboxes/${enc(inboxId)}/threads/${enc(threadId)}`;
  const thread = useLoad(() => get<Thread>(url), [url]);
  const action = useAction();
  const [newLabel, setNewLabel] = useState('');

  // Opening a thread reads it: drop `unread` once, the way mail clients do.
  useEffect(() => {
    if (thread.data?.labels.includes('unread')) void patch(url, { remove_labels: ['unread'] }).then(thread.reload, () => undefined);
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
    });

  const t = thread.data;
  return (
    <Page
      title={t?.subject || '(no subject)'}
      actions={
        <>
          <a class="button" href={inboxPath(inboxId)}>
            Back
          </a>
          <button
            class="danger"
            onClick={() =>
              confirmed('Delete the whole thread? This cannot be undone.') &&
              void action.run(async () => {
                await del(url);
                navigate(inboxPath(inboxId), true);
              })
            }
          >
            Delete thread
          </button>
        </>
      }
    >
      <Loading loaded={thread} />
      <ErrorBox error={action.error} />
      {t && (
        <>
          <div class="card">
            <div class="labels" data-testid="thread-labels">
              {t.labels.map((l) => (
                <span class={`label label-${l}`} key={l}>
                  {l}
                  {!SYSTEM_LABELS.has(l) && (
                    <button class="small" style={{ minHeight: 0, padding: '0 0.3rem', marginLeft: '0.2rem', border: 0, background: 'none' }} aria-label={`Remove label ${l}`} onClick={() => void editLabels({ remove_labels: [l] })}>
                      ×
                    </button>
                  )}
                </span>
              ))}
            </div>
            <form
              class="row"
              style={{ marginTop: '0.5rem' }}
              onSubmit={(e) => {
                e.preventDefault();
                if (newLabel.trim()) void editLabels({ add_labels: [newLabel.trim()] }).then((ok) => ok && setNewLabel(''));
              }}
            >
              <input aria-label="New label" placeholder="add a label" value={newLabel} onInput={(e) => setNewLabel(e.currentTarget.value)} />
              <button>Add label</button>
              {!t.labels.includes('unread') && (
                <button type="button" onClick={() => void editLabels({ add_labels: ['unread'] })}>
                  Mark unread
                </button>
              )}
            </form>
          </div>
          {t.messages.map((m) => (
            <MessageView key={m.message_id} message={m} onChanged={() => (t.messages.length > 1 ? thread.reload() : navigate(inboxPath(inboxId), true))} />
          ))}
        </>
      )}
    </Page>
  );
}
