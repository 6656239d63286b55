/**
 * One message in the reading pane: who, when, what svc found in it (one-time codes with copy
 * buttons, action links shown with their real target, the manipulation warning), the body in the
 * sandboxed frame, attachments (image previews, a PDF's first page in the browser's own viewer;
 * everything downloads), and on request its headers and raw source (a text view and the `.eml`
 * download).
 */
import { useEffect, useState } from 'preact/hooks';
import { del, enc, get, query } from '../api';
import { ErrorBox, Labels, bytes, confirmed, followDownload, useAction, when } from '../ui';
import { MailBody, ManipulationWarning } from './thread';
import type { Attachment, Message } from '../api-types';

/** Raw sources longer than this are cut in the text view (the download has every byte). */
const RAW_VIEW_MAX_CHARS = 512 * 1024;
/** Image types the browser decodes as pictures only (no scripts, unlike SVG documents). */
const PREVIEW_IMAGE = /^image\/(png|jpe?g|gif|webp|avif|bmp)$/i;
const PREVIEW_PDF = /^application\/pdf$/i;
/**
 * The first page in the browser's own PDF viewer: the download route serves a PDF inline only
 * when its bytes are a PDF, sandboxed (opaque origin, no script) and frameable by svc's pages only.
 */
const pdfPreviewUrl = (download: string) => `${download}${download.includes('?') ? '&' : '?'}view=inline#page=1&toolbar=0&navpanes=0&view=FitH`;

export function composeHref(m: Pick<Message, 'inbox_id' | 'message_id'>, mode: 'reply' | 'reply-all' | 'forward'): string {
  return `/compose${query({ inbox: m.inbox_id, mode, message: m.message_id })}`;
}

const messageBase = (m: Pick<Message, 'inbox_id' | 'message_id'>) => `/v0/inboxes/${enc(m.inbox_id)}/messages/${enc(m.message_id)}`;

async function downloadLink(m: Message, a: Attachment): Promise<string> {
  return (await get<{ download_url: string }>(`${messageBase(m)}/attachments/${enc(a.attachment_id)}`)).download_url;
}


/** Copies to the clipboard; says "Copied" for a moment so the owner knows it worked. */
function CopyButton({ text, label }: { text: string; label: string }) {
  const [state, setState] = useState<'idle' | 'copied' | 'failed'>('idle');
  return (
    <button
      class="small copy"
      aria-label={label}
      onClick={() =>
        void navigator.clipboard.writeText(text).then(
          () => {
            setState('copied');
            setTimeout(() => setState('idle'), 1500);
          },
          () => setState('failed'),
        )
      }
    >
      {state === 'copied' ? 'Copied' : state === 'failed' ? 'Copy failed' : 'Copy'}
    </button>
  );
}

/** A link's real target, host first: what it says is not where it goes. */
function hostOf(url: string): string {
  try {
    return new URL(url).host;
  } catch {
    return '';
  }
}

function Extracted({ extracted }: { extracted: NonNullable<Message['extracted']> }) {
  if (extracted.codes.length === 0 && extracted.links.length === 0) return null;
  return (
    <section class="extracted" data-testid="extracted" aria-label="Codes and links svc found">
      {extracted.codes.map((c) => (
        <div class="extracted-code" key={c.value} data-testid="extracted-code">
          <span class="muted small">Code</span> <code class="code-value">{c.value}</code> <CopyButton text={c.value} label={`Copy code ${c.value}`} />
          {c.context && <span class="muted small extracted-context">{c.context}</span>}
        </div>
      ))}
      {extracted.links.map((l) => (
        <div class="extracted-link" key={l.url} data-testid="extracted-link">
          <span class="badge">{l.kind}</span> {l.text && <span class="link-text">{l.text}</span>}{' '}
          <span class="muted small">→</span>{' '}
          {/^https?:\/\//i.test(l.url) ? (
            <a href={l.url} target="_blank" rel="noopener noreferrer" class="link-target" title={l.url}>
              <strong>{hostOf(l.url)}</strong>
              {l.url.slice(l.url.indexOf(hostOf(l.url)) + hostOf(l.url).length)}
            </a>
          ) : (
            <code class="link-target">{l.url}</code>
          )}{' '}
          <CopyButton text={l.url} label={`Copy link ${l.url}`} />
        </div>
      ))}
    </section>
  );
}

function AttachmentItem({ message, attachment }: { message: Message; attachment: Attachment }) {
  const action = useAction();
  const [preview, setPreview] = useState<string | null>(null);
  const image = PREVIEW_IMAGE.test(attachment.content_type ?? '');
  const pdf = PREVIEW_PDF.test(attachment.content_type ?? '');
  useEffect(() => {
    // Same-origin download URL as an <img>: the shell's img-src 'self' allows it, nothing else runs.
    if (image || pdf) void downloadLink(message, attachment).then(setPreview, () => setPreview(null));
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [message.message_id, attachment.attachment_id]);
  const name = attachment.filename ?? attachment.attachment_id;
  return (
    <div class="attachment" data-attachment={attachment.attachment_id}>
      {preview && image && <img class="attachment-preview" src={preview} alt={`Preview of ${name}`} data-testid="attachment-preview" />}
      {preview && pdf && <iframe class="attachment-pdf" src={pdfPreviewUrl(preview)} title={`First page of ${name}`} loading="lazy" data-testid="attachment-pdf" />}
      <button class="small" onClick={() => void action.run(async () => followDownload(await downloadLink(message, attachment)))}>
        ⤓ {name} ({bytes(attachment.size)})
      </button>
      <ErrorBox error={action.error} />
    </div>
  );
}

function HeadersView({ headers }: { headers: Record<string, string> }) {
  const entries = Object.entries(headers);
  return (
    <div class="table-wrap">
      <table class="list headers" data-testid="headers">
        <tbody>
          {entries.map(([name, value]) => (
            <tr key={name}>
              <th scope="row">{name}</th>
              <td>
                <code>{value}</code>
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}

/** The receiving servers' Authentication-Results headers, as written (anyone on the way, the sender included, can write one). */
function recordedResults(headers: Record<string, string>): { method: string; result: string; domain: string }[] {
  const out: { method: string; result: string; domain: string }[] = [];
  const value = Object.entries(headers).find(([n]) => n.toLowerCase() === 'authentication-results')?.[1] ?? '';
  for (const line of value.split('\n')) {
    for (const m of line.matchAll(/\b(spf|dkim|dmarc|arc)=(\w+)([^;]*)/gi)) {
      const domain = /(?:header\.d|header\.from|smtp\.mailfrom|header\.i)=([^\s;]+)/i.exec(m[3])?.[1] ?? '';
      out.push({ method: m[1].toLowerCase(), result: m[2].toLowerCase(), domain: domain.replace(/^.*@/, '') });
    }
  }
  return out;
}

type Verdict = NonNullable<MessageAuthentication['authentication']>;
interface MessageAuthentication {
  message_id: string;
  authentication: {
    spf: { result: string; domain: string | null };
    dkim: { result: string; signatures: { domain: string; selector: string | null; result: string; aligned: boolean }[] };
    dmarc: { result: string; policy: string | null; domain: string | null };
    arc: { result: string };
  } | null;
}

const resultClass = (r: string) => (r === 'pass' ? 'good' : r === 'fail' || r === 'softfail' || r === 'permerror' ? 'bad' : 'warn');
const Result = ({ result }: { result: string }) => <span class={`badge ${resultClass(result)}`}>{result}</span>;

function VerdictTable({ v }: { v: Verdict }) {
  return (
    <table class="list small" data-testid="auth-verdict">
      <tbody>
        <tr>
          <th scope="row">SPF</th>
          <td>
            <Result result={v.spf.result} /> {v.spf.domain ?? ''}
          </td>
        </tr>
        <tr>
          <th scope="row">DKIM</th>
          <td>
            <Result result={v.dkim.result} />{' '}
            {v.dkim.signatures.map((sig) => (
              <span key={`${sig.domain}${sig.selector}`} class="auth-signature">
                {sig.domain}
                {sig.selector ? ` (${sig.selector})` : ''}: {sig.result}
                {sig.aligned ? ', aligned' : ''}
              </span>
            ))}
          </td>
        </tr>
        <tr>
          <th scope="row">DMARC</th>
          <td>
            <Result result={v.dmarc.result} /> {v.dmarc.domain ?? ''}
            {v.dmarc.policy ? ` (policy ${v.dmarc.policy})` : ''}
          </td>
        </tr>
        <tr>
          <th scope="row">ARC</th>
          <td>
            <Result result={v.arc.result} />
          </td>
        </tr>
      </tbody>
    </table>
  );
}

function AuthView({ message }: { message: Message }) {
  const [verdict, setVerdict] = useState<MessageAuthentication | null>(null);
  const action = useAction();
  useEffect(() => {
    void action.run(async () => setVerdict(await get<MessageAuthentication>(`/v0/owner/mail/inboxes/${enc(message.inbox_id)}/messages/${enc(message.message_id)}/authentication`)));
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [message.message_id]);
  const recorded = recordedResults(message.headers);
  return (
    <div class="auth-results" data-testid="auth-results">
      {message.labels.includes('unauthenticated') && <div class="warning small">svc marked this message unauthenticated: its sender's domain did not vouch for it.</div>}
      <ErrorBox error={action.error} />
      {verdict?.authentication ? (
        <>
          <p class="muted small">What svc checked when the mail arrived:</p>
          <VerdictTable v={verdict.authentication} />
        </>
      ) : (
        verdict && <p class="muted small">svc kept no verdict for this message (mail svc sent, or mail received before svc kept them).</p>
      )}
      {recorded.length > 0 && (
        <>
          <p class="muted small">Authentication-Results headers in the message (written by servers on the way; a sender can forge them):</p>
          <table class="list small" data-testid="auth-recorded">
            <tbody>
              {recorded.map((r, i) => (
                <tr key={i}>
                  <th scope="row">{r.method.toUpperCase()}</th>
                  <td>
                    <Result result={r.result} /> {r.domain}
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </>
      )}
    </div>
  );
}

function SourceView({ message }: { message: Message }) {
  const [text, setText] = useState<string | null>(null);
  const action = useAction();
  useEffect(() => {
    void action.run(async () => {
      const link = await get<{ download_url: string }>(`${messageBase(message)}/raw`);
      const res = await fetch(link.download_url, { credentials: 'omit', cache: 'no-store' });
      if (!res.ok) throw new Error(`The raw source could not be read (${res.status}).`);
      const raw = await res.text();
      setText(raw.length > RAW_VIEW_MAX_CHARS ? `${raw.slice(0, RAW_VIEW_MAX_CHARS)}\n…(cut here; download the .eml for all of it)` : raw);
    });
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [message.message_id]);
  return (
    <div>
      <ErrorBox error={action.error} />
      {text === null && !action.error && <p class="muted small">Loading the source…</p>}
      {text !== null && (
        <pre class="raw-source" data-testid="raw-source">
          {text}
        </pre>
      )}
    </div>
  );
}

type Panel = 'none' | 'details' | 'source';

export function MessageView({ message, expanded, onChanged }: { message: Message; expanded: boolean; onChanged: () => void }) {
  const action = useAction();
  const [open, setOpen] = useState(expanded);
  const [panel, setPanel] = useState<Panel>('none');
  const toggle = (p: Panel) => setPanel(panel === p ? 'none' : p);
  if (!open) {
    return (
      <article class="message collapsed" data-message={message.message_id}>
        <button class="message-collapsed" onClick={() => setOpen(true)} aria-expanded="false">
          <strong>{message.from}</strong> <span class="muted">{message.preview}</span> <span class="muted small">{when(message.timestamp)}</span>
        </button>
      </article>
    );
  }
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
      {message.extracted && <Extracted extracted={message.extracted} />}
      <MailBody message={message} />
      {message.attachments.length > 0 && (
        <div class="attachments">
          {message.attachments.map((a) => (
            <AttachmentItem key={a.attachment_id} message={message} attachment={a} />
          ))}
        </div>
      )}
      <div class="actions message-actions">
        <a class="button small" href={composeHref(message, 'reply')}>
          Reply
        </a>
        <a class="button small" href={composeHref(message, 'reply-all')}>
          Reply all
        </a>
        <a class="button small" href={composeHref(message, 'forward')}>
          Forward
        </a>
        <button class="small" aria-pressed={panel === 'details'} onClick={() => toggle('details')}>
          Details
        </button>
        <button class="small" aria-pressed={panel === 'source'} onClick={() => toggle('source')}>
          View source
        </button>
        <button
          class="small"
          onClick={() =>
            void action.run(async () => {
              const link = await get<{ download_url: string }>(`${messageBase(message)}/raw`);
              followDownload(link.download_url);
            })
          }
        >
          Download .eml
        </button>
        <button
          class="small danger"
          onClick={() =>
            confirmed('Delete this message? This cannot be undone.') &&
            void action.run(async () => {
              await del(messageBase(message));
              onChanged();
            })
          }
        >
          Delete message
        </button>
      </div>
      {panel === 'details' && (
        <section class="message-details" aria-label="Message details">
          <h3 class="part-title">Authentication</h3>
          <AuthView message={message} />
          <h3 class="part-title">Headers</h3>
          <HeadersView headers={message.headers} />
        </section>
      )}
      {panel === 'source' && <SourceView message={message} />}
      <ErrorBox error={action.error} />
    </article>
  );
}
