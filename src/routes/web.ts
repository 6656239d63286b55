/**
 * The owner web app (spec §4.14, ARCHITECTURE §10): the files `npm run build` writes to web/dist,
 * served at `/` on the loopback listener only. Everything under /v0, /mcp, /oauth and /.well-known
 * belongs to the API and falls through to the not-found handler. Hashed assets are cached for a
 * year; the app shell (index.html) is never cached and carries a strict Content-Security-Policy.
 * Paths that are not files are app routes (/login, /inboxes/…): they get the shell, and the app's
 * router draws the page.
 */
import fs from 'node:fs';
import path from 'node:path';
import { gzipSync } from 'node:zlib';
import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import { webAppDir } from '../http/web-app.js';

/** Vite puts content-hashed files here; a changed file gets a new name, so they never go stale. */
const HASHED_ASSETS = '/assets/';
const IMMUTABLE = 'public, max-age=31536000, immutable';
/** Text smaller than this is sent as is: gzip would save little and cost a header. */
const GZIP_MIN_BYTES = 1024;
/** Paths the app never owns (spec §4.14). */
const API_PREFIXES = ['/v0', '/mcp', '/oauth', '/.well-known'];

const TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.json': 'application/json; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.ico': 'image/x-icon',
  '.webmanifest': 'application/manifest+json',
  '.txt': 'text/plain; charset=utf-8',
  '.woff2': 'font/woff2',
};

/**
 * The shell's policy. Scripts only from our own files (no inline script, no eval). Styles allow
 * 'unsafe-inline' and images allow remote http(s) because a sandboxed `srcdoc` iframe inherits this
 * policy: mail HTML needs its inline styles, and remote images once the owner allows them. The mail
 * frame carries its own stricter policy (images off by default) on top; this one only has to let it.
 */
export const APP_CSP = [
  "default-src 'self'",
  "script-src 'self'",
  "style-src 'self' 'unsafe-inline'",
  "img-src 'self' data: blob: https: http:",
  "font-src 'self' data:",
  "connect-src 'self'",
  "frame-src 'self'",
  "object-src 'none'",
  "base-uri 'none'",
  "form-action 'self'",
  "frame-ancestors 'none'",
].join('; ');

interface StaticFile {
  body: Buffer;
  gzip: Buffer | null;
  type: string;
  cache: string;
}

function isApiPath(url: string): boolean {
  return API_PREFIXES.some((p) => url === p || url.startsWith(`${p}/`) || url.startsWith(`${p}?`));
}

/** Reads the whole built app into memory once: it is small, and nothing outside it can be served. */
function loadFiles(root: string): Map<string, StaticFile> {
  const files = new Map<string, StaticFile>();
  const walk = (dir: string) => {
    for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
      const full = path.join(dir, entry.name);
      if (entry.isDirectory()) {
        walk(full);
        continue;
      }
      if (!entry.isFile()) continue;
      const urlPath = '/' + path.relative(root, full).split(path.sep).join('/');
      const type = TYPES[path.extname(entry.name).toLowerCase()] ?? 'application/octet-stream';
      const body = fs.readFileSync(full);
      const compressible = /^(text\/|application\/(json|manifest)|image\/svg)/.test(type) && body.length >= GZIP_MIN_BYTES;
      files.set(urlPath, { body, gzip: compressible ? gzipSync(body, { level: 9 }) : null, type, cache: urlPath.startsWith(HASHED_ASSETS) ? IMMUTABLE : 'no-cache' });
    }
  };
  walk(root);
  return files;
}

function send(request: FastifyRequest, reply: FastifyReply, file: StaticFile): FastifyReply {
  reply.type(file.type).header('vary', 'accept-encoding');
  const acceptsGzip = /\bgzip\b/.test(String(request.headers['accept-encoding'] ?? ''));
  if (file.gzip && acceptsGzip) return reply.header('content-encoding', 'gzip').send(file.gzip);
  return reply.send(file.body);
}

export const webAppRoutes: FastifyPluginAsync = async (app) => {
  const root = webAppDir();
  if (root === null) return; // not built: svc serves the API alone
  const files = loadFiles(root);
  const shell = files.get('/index.html');
  if (!shell) return;
  shell.cache = 'no-store';

  // The app-level hook sets `cache-control: no-store` on every answer; this plugin's hook runs
  // after it and restores the caching decided for each file.
  const cacheFor = new WeakMap<FastifyRequest, string>();
  app.addHook('onSend', async (request, reply) => {
    const cache = cacheFor.get(request);
    if (cache !== undefined) reply.header('cache-control', cache);
  });

  // Public files; a link to the app from elsewhere is a top-level navigation and allowed.
  app.get('/*', { config: { auth: 'none', origins: 'navigation' } }, async (request, reply) => {
    const urlPath = request.url.split('?')[0];
    let decoded: string;
    try {
      decoded = decodeURIComponent(urlPath);
    } catch {
      return reply.callNotFound();
    }
    // Any spelling of an API path (`/V0/…`, `/v0%2F…`) is the API's 404, never the app shell.
    if (isApiPath(decoded.toLowerCase())) return reply.callNotFound();
    const file = files.get(decoded);
    if (file && file !== shell) {
      cacheFor.set(request, file.cache);
      return send(request, reply, file);
    }
    // A missing file (anything under /assets/, or a top-level name with an extension such as
    // /favicon.ico) is a 404, not the shell: a stale page asking for an old bundle must fail visibly
    // rather than get HTML as script. Deeper paths with dots are app routes (/inboxes/a@b.test).
    if (file !== shell && (decoded.startsWith(HASHED_ASSETS) || /^\/[^/]*\.[A-Za-z0-9]+$/.test(decoded))) return reply.callNotFound();
    // The app lives at svc's one canonical origin (http://127.0.0.1:<port>): a session made at
    // localhost or [::1] would be sent wherever those names lead, and another process can hold
    // [::1]:<port> while svc runs (docs/security.md, "A squatter on svc's port").
    const canonical = new URL(request.server.svc.origin());
    if (request.headers.host !== canonical.host) return reply.redirect(`${canonical.origin}${request.url}`, 308);
    cacheFor.set(request, shell.cache);
    reply
      .header('content-security-policy', APP_CSP)
      .header('x-frame-options', 'DENY')
      .header('referrer-policy', 'no-referrer')
      .header('cross-origin-opener-policy', 'same-origin')
      .header('permissions-policy', 'camera=(), microphone=(), geolocation=()');
    return send(request, reply, shell);
  });
};
