/**
 * Signed download URLs (spec §4.7). The token is the credential: no bearer and no cookie is
 * needed. Every fetch rechecks the issuer as it stands now (activity, scope, permissions,
 * hidden labels) in `verifyDownload`, a pure function of the claims, the clock and the database.
 */
import type { FastifyPluginAsync, FastifyRequest } from 'fastify';
import { Type, type Static } from 'typebox';
import type { Db } from '../db/open.js';
import { refreshPrincipal } from '../auth/credentials.js';
import { readDownloadToken, type DownloadClaims } from '../auth/downloads.js';
import { ApiError, missingPermission, unauthorized } from '../core/errors.js';
import { hasPermission, inScope, type Principal } from '../auth/principal.js';
import { draftAttachmentFile } from '../mail/drafts/repository.js';
import { isVisible, readVisibility } from '../mail/labels.js';
import { attachmentFile, downloadMessage, messageLabelNames } from '../mail/download-files.js';
import { rawMime } from '../mail/raw-mime.js';

/** Longest filename sent in Content-Disposition, in characters. */
const FILENAME_MAX = 200;

export interface DownloadFile {
  content: Buffer;
  contentType: string;
  filename: string;
}

export type DownloadOutcome =
  | { status: 200; file: DownloadFile }
  /** The issuer is revoked or expired, or a bearer was sent that is not the issuer. */
  | { status: 401 }
  /** The issuer no longer holds the read permission for this kind of file. */
  | { status: 403; permission: string }
  /** Expired, wrong origin, out of scope, hidden, or gone. One answer, so nothing leaks. */
  | { status: 404 };

/** Who presented a bearer alongside the URL, if anyone. */
export type Presenter = Pick<Principal, 'kind' | 'id'> | null;

/**
 * The issuer as a principal to refresh. Owner kinds hold every permission; an owner bearer is
 * valid for the life of the process, which is also the life of the signing key.
 */
function issuerPrincipal(issuer: DownloadClaims['issuer']): Principal {
  const owner = issuer.kind === 'owner' || issuer.kind === 'session';
  return { kind: issuer.kind, id: issuer.id, tokenId: issuer.tokenId, inboxScope: owner ? 'all' : new Set(), permissions: owner ? 'all' : new Set(), sendPolicy: 'read_only' };
}

const MEDIA_TYPE = /^[a-z0-9][a-z0-9!#$&^_.+-]{0,126}\/[a-z0-9][a-z0-9!#$&^_.+-]{0,126}$/;

/** The stored type without parameters when it is a well-formed media type; octet-stream otherwise. */
function servedType(stored: string | null): string {
  const essence = (stored ?? '').split(';')[0].trim().toLowerCase();
  return MEDIA_TYPE.test(essence) ? essence : 'application/octet-stream';
}

/** A filename safe in a header and on any file system: no paths, controls, quotes or leading dots. */
export function safeFilename(name: string | null, fallback: string): string {
  const cleaned = [...(name ?? '').normalize('NFC').replace(/[\u0000-\u001f\u007f-\u009f"*/:<>?\\|]+/g, '_')]
    .slice(0, FILENAME_MAX)
    .join('')
    .replace(/^[\s._]+|[\s.]+$/g, '');
  return cleaned === '' ? fallback : cleaned;
}

/** RFC 6266 / 8187: an ASCII fallback plus the exact UTF-8 name. */
export function contentDisposition(filename: string, disposition: 'attachment' | 'inline' = 'attachment'): string {
  const ascii = filename.replace(/[^\x20-\x7e]/g, '_').replace(/[\\"%]/g, '_');
  const encoded = encodeURIComponent(filename).replace(/['()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);
  return `${disposition}; filename="${ascii}"; filename*=UTF-8''${encoded}`;
}

/**
 * Decides one fetch. Order: token lifetime and origin (404) → a presented bearer must be the
 * issuer (401) → issuer still active (401) → inbox in the issuer's current scope (404) → read
 * permission (403) → the file exists and no hidden label the issuer cannot read is on it (404).
 */
export function verifyDownload(claims: DownloadClaims, now: number, db: Db, origin: string, presenter: Presenter = null): DownloadOutcome {
  if (claims.exp <= now || claims.origin !== origin) return { status: 404 };
  if (presenter && (presenter.kind !== claims.issuer.kind || presenter.id !== claims.issuer.id)) return { status: 401 };
  const issuer = refreshPrincipal(db, issuerPrincipal(claims.issuer));
  // An OAuth URL stays with the issuing token's audience: the grant must still be for it.
  if (!issuer || (issuer.kind === 'oauth' && issuer.audience !== claims.audience)) return { status: 401 };
  const target = claims.target;
  if (!inScope(issuer, target.inboxId)) return { status: 404 };
  const permission = target.kind === 'draft_attachment' ? 'draft_read' : 'message_read';
  if (!hasPermission(issuer, permission)) return { status: 403, permission };
  if (target.kind === 'draft_attachment') {
    const file = draftAttachmentFile(db, target.inboxId, target.draftId, target.attachmentId);
    if (!file) return { status: 404 };
    return { status: 200, file: { content: file.content, contentType: servedType(file.content_type), filename: safeFilename(file.filename, `attachment-${target.attachmentId}`) } };
  }

  const message = downloadMessage(db, target.inboxId, target.messageId);
  if (!message) return { status: 404 };
  // The same rule as a direct read by id: hidden mail needs the matching label_<name>_read.
  if (!isVisible(messageLabelNames(db, message.id), readVisibility(issuer))) return { status: 404 };

  if (target.kind === 'raw') {
    const mime = rawMime(db, message.id);
    if (!mime) return { status: 404 };
    const stem = safeFilename(message.message_id.replace(/^<|>$/g, ''), 'message');
    return { status: 200, file: { content: mime, contentType: 'message/rfc822', filename: `${stem}.eml` } };
  }
  const attachment = attachmentFile(db, message.id, target.attachmentId);
  if (!attachment) return { status: 404 };
  return {
    status: 200,
    file: { content: attachment.content, contentType: servedType(attachment.content_type), filename: safeFilename(attachment.filename, `attachment-${target.attachmentId}`) },
  };
}

// No length rules: any token that does not verify, empty included, is the same 404.
const TokenParams = Type.Object({ token: Type.String() });
/** `view=inline`: the owner's web app previews a PDF in the browser's own viewer (docs/downloads.md). */
const DownloadQuery = Type.Object({ view: Type.Optional(Type.Literal('inline')) }, { additionalProperties: false });

/**
 * A PDF's header. Readers accept it anywhere in the first 1024 bytes; svc previews only a file
 * that starts with it, so text that merely mentions it is never handed to the viewer (a PDF with
 * leading bytes still downloads).
 */
const PDF_HEADER = Buffer.from('%PDF-');

/**
 * Whether a file may be shown inline: a PDF by its stored type and by its own first bytes. Forced
 * to `application/pdf` with nosniff, so the browser hands it to its PDF viewer and never parses
 * it as a page; anything else stays an attachment whatever `view` says.
 */
export function inlinePdf(file: DownloadFile): boolean {
  return file.contentType === 'application/pdf' && file.content.subarray(0, PDF_HEADER.length).equals(PDF_HEADER);
}

const gone = () =>
  new ApiError('not_found', 'The download URL is invalid or expired, or the file is no longer available.', {
    fix: 'Ask the attachment or raw route for a new download_url; URLs last five minutes and end when svc restarts.',
  });

/** The origin this request reached: scheme and Host, as a browser would name it. */
function requestOrigin(request: FastifyRequest): string {
  return `${request.protocol}://${request.host}`;
}

export const downloadRoutes: FastifyPluginAsync = async (app) => {
  const { db } = app.svc;

  app.get<{ Params: Static<typeof TokenParams>; Querystring: Static<typeof DownloadQuery> }>(
    '/downloads/:token',
    { config: { auth: 'public', origins: 'navigation' }, schema: { params: TokenParams, querystring: DownloadQuery } },
    async (request, reply) => {
    const claims = readDownloadToken(request.params.token);
    // A URL for 127.0.0.1 fetched as localhost (or through another listener) is a different origin.
    // Tunnel traffic arrives over plain HTTP from the connector: the listener itself is the origin.
    const origin = app.svc.listener === 'tunnel' ? app.svc.origin() : requestOrigin(request);
    if (!claims || origin !== app.svc.origin()) throw gone();
    // The app hook has already resolved (or refused) an Authorization header; a cookie is ignored.
    const presenter = request.headers.authorization !== undefined ? request.principal : null;
    const outcome = verifyDownload(claims, Date.now(), db, origin, presenter);
    switch (outcome.status) {
      case 401:
        throw unauthorized('The credential that issued this download URL was revoked or expired, or the bearer sent is not that credential.');
      case 403:
        throw missingPermission(outcome.permission);
      case 404:
        throw gone();
    }
    const { file } = outcome;
    const inline = request.query.view === 'inline' && inlinePdf(file);
    // The document is sandboxed either way (an opaque origin, no script); only svc's own pages may
    // frame an inline PDF, and nothing may frame a download.
    return reply
      .header('content-type', file.contentType)
      .header('content-disposition', contentDisposition(file.filename, inline ? 'inline' : 'attachment'))
      .header('content-security-policy', `default-src 'none'; frame-ancestors ${inline ? "'self'" : "'none'"}; sandbox`)
      .header('x-content-type-options', 'nosniff')
      .header('cache-control', 'no-store')
      .send(file.content);
    },
  );
};
