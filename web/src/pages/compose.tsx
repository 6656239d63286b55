/** Compose a new message, or reply / reply all / forward an existing one (spec §2.4, §4.5). */
import { enc, get, post } from '../api';
import { navigate } from '../router';
import { ErrorBox, Page, bytes, formValues, useAction, useLoad } from '../ui';
import type { Message, SendBody } from '../api-types';
import { useState } from 'preact/hooks';

type Mode = 'new' | 'reply' | 'reply-all' | 'forward';

interface FileAttachment {
  filename: string;
  content_type: string;
  content: string;
  size: number;
}

function readAsBase64(file: File): Promise<string> {
  return new Promise((resolve, reject) => {
    const reader = new FileReader();
    reader.onload = () => resolve(String(reader.result).replace(/^data:[^,]*,/, ''));
    reader.onerror = () => reject(reader.error ?? new Error('Could not read the file.'));
    reader.readAsDataURL(file);
  });
}

const list = (s: string | undefined) =>
  (s ?? '')
    .split(',')
    .map((x) => x.trim())
    .filter(Boolean);

export function ComposePage({ search }: { search: URLSearchParams }) {
  const inbox = search.get('inbox') ?? '';
  const messageId = search.get('message');
  const mode = ((messageId && search.get('mode')) || 'new') as Mode;
  const original = useLoad(
    () => (messageId ? get<Message>(`/v0/inboxes/${enc(inbox)}/messages/${enc(messageId)}`) : Promise.resolve(null)),
    [inbox, messageId],
  );
  const inboxes = useLoad(() => (inbox ? Promise.resolve(null) : get<{ inboxes: { inbox_id: string }[] }>('/v0/inboxes?limit=100')), [inbox]);
  const [files, setFiles] = useState<FileAttachment[]>([]);
  const action = useAction();

  const o = original.data;
  const title = mode === 'new' ? 'New message' : mode === 'forward' ? 'Forward' : mode === 'reply-all' ? 'Reply all' : 'Reply';
  return (
    <Page title={title}>
      {o && (
        <p class="muted">
          {mode === 'forward' ? 'Forwarding' : 'Replying to'} “{o.subject || '(no subject)'}” from {o.from}
          {mode === 'forward' && o.attachments.length > 0 && ` — its ${o.attachments.length} attachment(s) are included`}
        </p>
      )}
      <form
        class="card compose"
        onSubmit={(e) => {
          e.preventDefault();
          const v = formValues(e.currentTarget);
          const from = inbox || v.inbox;
          // SendBody is the widest of the send, reply and forward bodies; each mode sets only its own fields.
          const body: SendBody = { text: v.text };
          if (mode !== 'reply-all') {
            if (v.to) body.to = list(v.to);
            if (v.cc) body.cc = list(v.cc);
            if (v.bcc) body.bcc = list(v.bcc);
          }
          if ((mode === 'new' || mode === 'forward') && v.subject) body.subject = v.subject;
          if (files.length) body.attachments = files.map(({ filename, content_type, content }) => ({ filename, content_type, content }));
          const base = `/v0/inboxes/${enc(from)}/messages`;
          const url = mode === 'new' ? `${base}/send` : `${base}/${enc(messageId!)}/${mode}`;
          void action.run(async () => {
            const sent = await post<{ message_id: string; thread_id: string }>(url, body);
            navigate(`/inboxes/${enc(from)}/threads/${enc(sent.thread_id)}`, true);
          });
        }}
      >
        {inbox ? (
          <p>
            From <strong>{inbox}</strong>
          </p>
        ) : (
          <label>
            From
            <select name="inbox" required>
              {inboxes.data?.inboxes.map((i) => (
                <option key={i.inbox_id}>{i.inbox_id}</option>
              ))}
            </select>
          </label>
        )}
        {mode !== 'reply-all' && (
          <>
            <label>
              To{mode === 'reply' && <span class="muted small"> (empty: the sender)</span>}
              <input name="to" required={mode === 'new' || mode === 'forward'} placeholder="a@example.com, b@example.com" />
            </label>
            <div class="row">
              <label>
                Cc
                <input name="cc" />
              </label>
              <label>
                Bcc
                <input name="bcc" />
              </label>
            </div>
          </>
        )}
        {(mode === 'new' || mode === 'forward') && (
          <label>
            Subject
            <input name="subject" maxLength={998} placeholder={mode === 'forward' ? 'empty: Fwd: and the original subject' : ''} />
          </label>
        )}
        <label>
          Message
          <textarea name="text" required rows={8} />
        </label>
        <label>
          Attachments
          <input
            type="file"
            multiple
            onChange={(e) => {
              const chosen = Array.from(e.currentTarget.files ?? []);
              void action.run(async () => {
                const read = await Promise.all(chosen.map(async (f) => ({ filename: f.name, content_type: f.type || 'application/octet-stream', content: await readAsBase64(f), size: f.size })));
                setFiles(read);
              });
            }}
          />
        </label>
        {files.length > 0 && <p class="muted small">{files.map((f) => `${f.filename} (${bytes(f.size)})`).join(', ')}</p>}
        <ErrorBox error={original.error ?? action.error} />
        {/* Stays at the bottom of the window while the form is longer than it, as in a mail client. */}
        <div class="actions compose-actions">
          <button class="primary" disabled={action.busy}>
            Send
          </button>
          <button type="button" onClick={() => history.back()}>
            Cancel
          </button>
        </div>
      </form>
    </Page>
  );
}
