/**
 * Control: a draft waiting for the owner's approval (everything that will be sent; edit, approve,
 * reject with a reason) and a message whose send outcome is unknown (resolve as sent or failed),
 * as the "Needs you" page lists them; and the Scheduled page.
 */
import { useState } from 'preact/hooks';
import { ApiFailure, enc, get, patch, post } from '../api';
import { draftsWithStatus } from '../work-queues';
import { useLiveEvents } from '../live';
import { ErrorBox, Labels, Loading, Page, bytes, formValues, useAction, useLoad, when } from '../ui';
import { hasRemoteContent, mailDocument } from './thread';
import type { Draft, DraftItem, MessageItem, UpdateDraftBody } from '../api-types';

const draftPath = (d: DraftItem) => `/v0/inboxes/${enc(d.inbox_id)}/drafts/${enc(d.draft_id)}`;
const list = (s: string) =>
  s
    .split(',')
    .map((x) => x.trim())
    .filter(Boolean);

/**
 * What the owner decided about one draft. Kept by the page, not the list entry: the entry leaves
 * the list as soon as it is no longer pending, and its confirmation must stay readable.
 */
function decisionLine(item: DraftItem, outcome: string): string {
  return `“${item.subject || '(no subject)'}” to ${(item.to ?? []).join(', ') || '—'}: ${outcome}`;
}

/**
 * Everything the recipient will get, as the approval covers it (docs/web-app.md, "Approvals"):
 * the From line, every recipient, Reply-To, custom headers, the text part, the HTML part rendered
 * as the thread view renders mail (sandboxed, its own CSP, nothing remote loaded), attachments, and
 * svc's warnings where the two parts may not say the same thing.
 */
function DraftContent({ d }: { d: Draft }) {
  const headers = Object.entries(d.headers ?? {});
  const mismatch = d.part_mismatch ?? [];
  return (
    <div data-testid="draft-content">
      <dl class="fields small">
        <dt>From</dt>
        <dd data-testid="draft-from">{d.from ?? d.inbox_id}</dd>
        <dt>To</dt>
        <dd>{(d.to ?? []).join(', ') || '—'}</dd>
        {(d.cc ?? []).length > 0 && (
          <>
            <dt>Cc</dt>
            <dd>{d.cc!.join(', ')}</dd>
          </>
        )}
        {(d.bcc ?? []).length > 0 && (
          <>
            <dt>Bcc</dt>
            <dd>{d.bcc!.join(', ')}</dd>
          </>
        )}
        {(d.reply_to ?? []).length > 0 && (
          <>
            <dt>Reply-To</dt>
            <dd data-testid="draft-reply-to">
              <strong>{d.reply_to!.join(', ')}</strong> <span class="muted">(replies go here, not to {d.inbox_id})</span>
            </dd>
          </>
        )}
        <dt>Subject</dt>
        <dd>{d.subject ?? (d.forward_of ? '(Fwd: the original’s subject)' : '(no subject)')}</dd>
        {headers.length > 0 && (
          <>
            <dt>Headers</dt>
            <dd data-testid="draft-headers">
              {headers.map(([name, value]) => (
                <div key={name}>
                  <code>{name}: {value}</code>
                </div>
              ))}
            </dd>
          </>
        )}
        {d.in_reply_to && (
          <>
            <dt>Replies to</dt>
            <dd>
              <code>{d.in_reply_to}</code>
            </dd>
          </>
        )}
        {d.forward_of && (
          <>
            <dt>Forwards</dt>
            <dd>
              <code>{d.forward_of}</code> <span class="muted">(its text, HTML and attachments are added below this when sent)</span>
            </dd>
          </>
        )}
        {d.attachments.length > 0 && (
          <>
            <dt>Attachments</dt>
            <dd data-testid="draft-attachments">
              {d.attachments.map((a) => (
                <div key={a.attachment_id}>
                  {a.filename ?? '(unnamed)'} <span class="muted">({a.content_type ?? 'no type'}, {bytes(a.size)}{a.content_disposition === 'inline' ? ', inline' : ''})</span>
                </div>
              ))}
            </dd>
          </>
        )}
      </dl>
      {mismatch.length > 0 && (
        <div class="warning" role="note" data-testid="part-mismatch">
          <strong>Check the HTML part: it may not say what the text part says.</strong> Most mail clients show the HTML.
          <ul>
            {mismatch.map((m) => (
              <li key={m.reason}>
                <code>{m.reason}</code>: {m.detail}
              </li>
            ))}
          </ul>
        </div>
      )}
      {d.text !== null && (
        <section>
          <h3 class="part-title">Text part</h3>
          <pre class="text" data-testid="draft-text">
            {d.text}
          </pre>
        </section>
      )}
      {d.html !== null && (
        <section>
          <h3 class="part-title">HTML part{d.text === null ? '' : ' (what most mail clients show)'}</h3>
          {hasRemoteContent(d.html) && <p class="muted small">Remote images are not loaded here.</p>}
          {/* Same frame as the thread view: sandbox="" (no scripts, forms, same-origin) and a CSP that loads nothing remote. */}
          <iframe class="mail" data-testid="draft-html" sandbox="" referrerpolicy="no-referrer" title={`HTML part of ${d.subject ?? 'the draft'}`} srcdoc={mailDocument(d.html, false)} />
        </section>
      )}
    </div>
  );
}

export function PendingDraft({ item, onDone, onDecided }: { item: DraftItem; onDone: () => void; onDecided: (line: string) => void }) {
  const [editing, setEditing] = useState(false);
  const full = useLoad(() => get<Draft>(draftPath(item)), [item.updated_at]);
  const action = useAction();
  const d = full.data;
  return (
    <li class="card" data-draft={item.draft_id}>
      <div class="item-line">
        <strong class="subject">{item.subject || '(no subject)'}</strong>
        <span class="muted small">{when(item.updated_at)}</span>
      </div>
      {item.send_at && <div class="muted small">sends {when(item.send_at)}</div>}
      {item.guard_findings && item.guard_findings.length > 0 && (
        <div class="warning" role="note" data-testid="guard-findings">
          <strong>Held by the outbound guard.</strong> The agent’s key is <code>guarded</code>; this is why it waits for you:
          <ul>
            {item.guard_findings.map((f) => (
              <li key={f.detector}>
                <code>{f.detector}</code>: {f.detail}
              </li>
            ))}
          </ul>
        </div>
      )}
      {d ? <DraftContent d={d} /> : <div class="item-sub">{item.preview}</div>}
      <Loading loaded={full} />
      <div class="actions" style={{ margin: '0.5rem 0' }}>
        <button class="small" disabled={!d} onClick={() => setEditing(!editing)}>
          {editing ? 'Close' : 'Edit'}
        </button>
        <button
          class="small primary"
          // Nothing is approved unseen: the button waits for the full draft to be shown.
          disabled={action.busy || !d}
          onClick={() =>
            void action.run(async () => {
              try {
                // Approve exactly the version shown: if the draft changed since, svc answers 409.
                const r = await post<{ message_id?: string; state?: string }>(`${draftPath(item)}/approve`, { expected_updated_at: d!.updated_at });
                onDecided(decisionLine(item, r.message_id ? 'approved and sent.' : `approved; it stays scheduled${item.send_at ? ` for ${when(item.send_at)}` : ''}.`));
              } catch (e) {
                if (e instanceof ApiFailure && e.code === 'conflict') onDone();
                throw e;
              }
              onDone();
            })
          }
        >
          Approve
        </button>
      </div>
      {editing && d && (
        <form
          onSubmit={(e) => {
            e.preventDefault();
            const v = formValues(e.currentTarget);
            void action.run(async () => {
              await patch(draftPath(item), { to: list(v.to), subject: v.subject, text: v.text } satisfies UpdateDraftBody);
              full.reload();
              onDone();
            });
          }}
        >
          <label>
            To
            <input name="to" defaultValue={(d.to ?? []).join(', ')} />
          </label>
          <label>
            Subject
            <input name="subject" defaultValue={d.subject ?? ''} />
          </label>
          <label>
            Text
            <textarea name="text" defaultValue={d.text ?? ''} />
          </label>
          {d.html && <p class="muted small">This draft also has an HTML part (shown above); editing the text leaves it as is.</p>}
          <button>Save changes</button>
        </form>
      )}
      <form
        class="row"
        style={{ marginTop: '0.5rem' }}
        onSubmit={(e) => {
          e.preventDefault();
          const v = formValues(e.currentTarget);
          void action.run(async () => {
            await post(`${draftPath(item)}/reject`, v.reason ? { reason: v.reason } : {});
            onDecided(decisionLine(item, 'rejected.'));
            onDone();
          });
        }}
      >
        <input name="reason" aria-label="Reason for rejecting" placeholder="reason (optional)" />
        <button class="danger">Reject</button>
      </form>
      <ErrorBox error={action.error} />
    </li>
  );
}

/** One message whose send outcome is unknown, with the owner's two answers ("Needs you" page). */
export function SendUnknownItem({ m, onDone }: { m: MessageItem; onDone: () => void }) {
  const action = useAction();
  const resolve = (decision: 'sent' | 'failed') =>
    action.run(async () => {
      await post(`/v0/inboxes/${enc(m.inbox_id)}/messages/${enc(m.message_id)}/resolve`, { decision });
      onDone();
    });
  return (
    <li data-message={m.message_id} class="queue-item">
      <div class="item-line">
        <a href={`/inboxes/${enc(m.inbox_id)}/threads/${enc(m.thread_id)}`} class="subject">
          {m.subject || '(no subject)'}
        </a>
        <span class="muted small">{when(m.timestamp)}</span>
      </div>
      <div class="muted small">
        from {m.inbox_id} to {m.to.join(', ')} <Labels labels={m.labels} />
      </div>
      <div class="actions" style={{ marginTop: '0.4rem' }}>
        <button class="small" disabled={action.busy} onClick={() => void resolve('sent')}>
          It was sent
        </button>
        <button class="small danger" disabled={action.busy} onClick={() => void resolve('failed')}>
          It was not sent
        </button>
      </div>
      <ErrorBox error={action.error} />
    </li>
  );
}

export function ScheduledPage() {
  const drafts = useLoad(() => draftsWithStatus('scheduled'), []);
  const action = useAction();
  useLiveEvents(['draft.'], () => drafts.reload());
  return (
    <Page title="Scheduled">
      <ErrorBox error={action.error} />
      <Loading loaded={drafts} />
      {drafts.data?.length === 0 && <p class="muted">No draft is scheduled.</p>}
      <ul class="items" data-testid="scheduled">
        {drafts.data?.map((d) => (
          <li key={d.draft_id} data-draft={d.draft_id} style={{ padding: '0.6rem 0.8rem' }}>
            <div class="item-line">
              <strong class="subject">{d.subject || '(no subject)'}</strong>
              <span class="small">sends {when(d.send_at)}</span>
            </div>
            <div class="muted small">
              from {d.inbox_id} to {(d.to ?? []).join(', ')}
            </div>
            <div class="actions" style={{ marginTop: '0.4rem' }}>
              <button
                class="small"
                onClick={() =>
                  void action.run(async () => {
                    await post(`${draftPath(d)}/send`);
                    drafts.reload();
                  })
                }
              >
                Send now
              </button>
              <button
                class="small danger"
                onClick={() =>
                  void action.run(async () => {
                    await patch(draftPath(d), { send_at: null } satisfies UpdateDraftBody);
                    drafts.reload();
                  })
                }
              >
                Cancel schedule
              </button>
            </div>
          </li>
        ))}
      </ul>
    </Page>
  );
}
