/**
 * Reading received attachments before the commit (src/attachment-text/on-receive.ts,
 * docs/attachments.md "When it is read"): a timeout at receive time leaves the attachment for its
 * first read instead of costing it its text for good; every other status is kept as read; kinds
 * svc does not read never reach the extraction lane; the message's budget leaves the rest unread.
 */
import t from 'tap';
import { readReceivedAttachments, type ExtractText } from '../../src/attachment-text/on-receive.js';
import type { AttachmentText } from '../../src/attachment-text/schemas.js';
import { MESSAGE_TEXT_BUDGET_MS } from '../../src/attachment-text/limits.js';

const file = (filename: string, contentType: string) => ({ content: new TextEncoder().encode('x'), contentType, filename });

t.test('a receive-time timeout is left for the first read; ok, encrypted and failed are kept', async (t) => {
  const answers: Record<string, AttachmentText> = {
    'slow.pdf': { status: 'timeout', text: null, truncated: false },
    'report.pdf': { status: 'ok', text: 'Quarterly report', truncated: false },
    'locked.pdf': { status: 'encrypted', text: null, truncated: false },
    'broken.docx': { status: 'failed', text: null, truncated: false },
  };
  const asked: string[] = [];
  const extract: ExtractText = async (f) => {
    asked.push(f.filename!);
    return answers[f.filename!];
  };
  const read = await readReceivedAttachments(
    [file('slow.pdf', 'application/pdf'), file('report.pdf', 'application/pdf'), file('photo.png', 'image/png'), file('locked.pdf', 'application/pdf'), file('broken.docx', 'application/vnd.openxmlformats-officedocument.wordprocessingml.document')],
    extract,
  );
  t.same(read, [null, answers['report.pdf'], { status: 'unsupported', text: null, truncated: false }, answers['locked.pdf'], answers['broken.docx']]);
  t.same(asked, ['slow.pdf', 'report.pdf', 'locked.pdf', 'broken.docx'], 'an image never goes to the extraction lane');
});

t.test('attachments not begun within the message budget are left unread', async (t) => {
  let clock = 0;
  const extract: ExtractText = async () => {
    clock += MESSAGE_TEXT_BUDGET_MS;
    return { status: 'ok', text: 'text', truncated: false };
  };
  const read = await readReceivedAttachments([file('a.txt', 'text/plain'), file('b.txt', 'text/plain')], extract, () => clock);
  t.same(read.map((r) => r?.status ?? null), ['ok', null]);
});
