/** Allow and block lists page: entries per direction, type and inbox, and the rejected inbound mail. */
import { useState } from 'preact/hooks';
import { del, enc, get, post } from '../api';
import { ErrorBox, Loading, Page, onSubmitWith, useAction, useLoad } from '../ui';
import type { Inbox, ListEntry, Rejection } from '../api-types';

export function ListsPage() {
  const [direction, setDirection] = useState('receive');
  const [type, setType] = useState('block');
  const [inbox, setInbox] = useState('');
  const inboxes = useLoad(() => get<{ inboxes: Inbox[] }>('/v0/inboxes?limit=100'), []);
  const base = `${inbox ? `/v0/inboxes/${enc(inbox)}` : '/v0'}/lists/${direction}/${type}`;
  const entries = useLoad(() => get<{ entries: ListEntry[] }>(`${base}?limit=100`), [base]);
  const rejections = useLoad(() => get<{ rejections: Rejection[] }>(`/v0/owner/lists/rejections?limit=50${inbox ? `&inbox_id=${enc(inbox)}` : ''}`), [inbox]);
  const action = useAction();
  return (
    <Page title="Allow and block lists">
      <div class="card row">
        <label>
          List of
          <select value={inbox} onChange={(e) => setInbox(e.currentTarget.value)}>
            <option value="">all inboxes (global)</option>
            {inboxes.data?.inboxes.map((i) => (
              <option key={i.inbox_id}>{i.inbox_id}</option>
            ))}
          </select>
        </label>
        <label>
          Direction
          <select value={direction} onChange={(e) => setDirection(e.currentTarget.value)}>
            <option>receive</option>
            <option>send</option>
            <option>reply</option>
          </select>
        </label>
        <label>
          Type
          <select value={type} onChange={(e) => setType(e.currentTarget.value)}>
            <option>block</option>
            <option>allow</option>
          </select>
        </label>
      </div>
      <form
        class="row"
        onSubmit={onSubmitWith(action, async (v, form) => {
          await post(base, { entry: v.entry, ...(v.reason ? { reason: v.reason } : {}) });
          form.reset();
          entries.reload();
        })}
      >
        <input name="entry" required aria-label="Address or domain" placeholder="address or domain" />
        <input name="reason" aria-label="Reason" placeholder="reason (optional)" />
        <button class="primary">Add</button>
      </form>
      <ErrorBox error={action.error ?? entries.error} />
      <ul class="items" data-testid="entries" style={{ marginTop: '0.6rem' }}>
        {entries.data?.entries.map((x) => (
          <li key={x.entry} class="item-line" style={{ padding: '0.5rem 0.8rem' }}>
            <span>
              <code>{x.entry}</code> {x.reason && <span class="muted small">— {x.reason}</span>}
            </span>
            <button
              class="small danger"
              onClick={() =>
                void action.run(async () => {
                  await del(`${base}/${enc(x.entry)}`);
                  entries.reload();
                })
              }
            >
              Remove
            </button>
          </li>
        ))}
      </ul>
      {entries.data?.entries.length === 0 && <p class="muted">This list is empty.</p>}
      <h2>Rejected inbound mail</h2>
      <p class="muted small">Mail refused by a receive block list: metadata only, the mail itself was not kept.</p>
      <Loading loaded={rejections} />
      <ul class="items" data-testid="rejections">
        {rejections.data?.rejections.map((r) => (
          <li key={r.rejection_id} class="item-line" style={{ padding: '0.5rem 0.8rem' }}>
            <span class="small">
              {Object.entries(r)
                .filter(([k, v]) => k !== 'rejection_id' && v !== null && typeof v !== 'object')
                .map(([k, v]) => `${k}: ${String(v)}`)
                .join(' · ')}
            </span>
            <button
              class="small danger"
              onClick={() =>
                void action.run(async () => {
                  await del(`/v0/owner/lists/rejections/${enc(r.rejection_id)}`);
                  rejections.reload();
                })
              }
            >
              Delete
            </button>
          </li>
        ))}
      </ul>
      {rejections.data?.rejections.length === 0 && <p class="muted">No rejections.</p>}
    </Page>
  );
}
