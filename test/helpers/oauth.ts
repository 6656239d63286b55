/** An OAuth client driven by hand with fetch (spec §5.3), for the oauth tests. */
import { createHash, randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import type { OAuthClientProvider } from '@modelcontextprotocol/sdk/client/auth.js';
import type { OAuthClientInformationMixed, OAuthClientMetadata, OAuthTokens } from '@modelcontextprotocol/sdk/shared/auth.js';
import { api, repoRoot, type ApiResponse } from './svc.js';

/**
 * /oauth/authorize needs the built web app. The web app's own build writes web/dist; when this
 * checkout has none yet, a minimal shell stands in (web/dist is git-ignored). Never deleted: the
 * real build replaces it.
 */
export function ensureWebApp(): void {
  const index = path.join(repoRoot, 'web', 'dist', 'index.html');
  if (fs.existsSync(index)) return;
  fs.mkdirSync(path.dirname(index), { recursive: true });
  fs.writeFileSync(index, '<!doctype html><title>svc</title>\n', { flag: 'wx' });
}

export interface Pkce {
  verifier: string;
  challenge: string;
}

export function pkce(): Pkce {
  const verifier = randomBytes(32).toString('base64url');
  return { verifier, challenge: createHash('sha256').update(verifier).digest('base64url') };
}

export interface Session {
  cookie: string;
  csrf: string;
}

export const REDIRECT = 'http://127.0.0.1:53682/callback';

export async function register(base: string, body: Record<string, unknown> = {}): Promise<ApiResponse<{ client_id: string } & Record<string, unknown>>> {
  return api(base, 'POST', '/oauth/register', { body: { client_name: 'Test Client', redirect_uris: [REDIRECT], ...body } });
}

/** A form-encoded POST, the way OAuth clients call the token and revocation endpoints. */
export async function form<T = Record<string, unknown>>(base: string, urlPath: string, params: Record<string, string>, headers: Record<string, string> = {}): Promise<ApiResponse<T>> {
  return api<T>(base, 'POST', urlPath, { rawBody: new URLSearchParams(params).toString(), headers: { 'content-type': 'application/x-www-form-urlencoded', ...headers } });
}

export function authorizePath(params: Record<string, string | undefined>): string {
  const query = new URLSearchParams();
  for (const [name, value] of Object.entries(params)) if (value !== undefined) query.set(name, value);
  return `/oauth/authorize?${query}`;
}

/** GET without following redirects; returns the status and the Location header. */
export async function visit(base: string, urlPath: string, cookie?: string): Promise<{ status: number; location: string | null; body: Record<string, unknown> | undefined }> {
  const res = await fetch(base + urlPath, { redirect: 'manual', headers: cookie ? { cookie } : {} });
  const text = await res.text();
  let body: Record<string, unknown> | undefined;
  try {
    body = text ? (JSON.parse(text) as Record<string, unknown>) : undefined;
  } catch {
    body = undefined;
  }
  return { status: res.status, location: res.headers.get('location'), body };
}

export interface AuthorizeOptions {
  clientId: string;
  resource: string;
  redirectUri?: string;
  state?: string;
}

/** Authorize with the owner's cookie and return the consent request id from the redirect. */
export async function startConsent(base: string, session: Session, opts: AuthorizeOptions & { challenge: string }): Promise<string> {
  const res = await visit(
    base,
    authorizePath({
      response_type: 'code',
      client_id: opts.clientId,
      redirect_uri: opts.redirectUri ?? REDIRECT,
      code_challenge: opts.challenge,
      code_challenge_method: 'S256',
      resource: opts.resource,
      state: opts.state,
      scope: 'svc',
    }),
    session.cookie,
  );
  const match = /^\/consent\?request=([^&]+)$/.exec(res.location ?? '');
  if (res.status !== 302 || !match) throw new Error(`authorize answered ${res.status} ${res.location} ${JSON.stringify(res.body)}`);
  return decodeURIComponent(match[1]);
}

export interface Approval {
  inbox_ids: string[];
  permissions?: string[] | Record<string, boolean>;
  send_policy?: string;
}

export async function approve(base: string, session: Session, requestId: string, approval: Approval): Promise<ApiResponse<{ redirect_to: string }>> {
  return api(base, 'POST', `/v0/owner/oauth/requests/${requestId}/approve`, {
    headers: { cookie: session.cookie, 'x-svc-csrf': session.csrf },
    body: { permissions: ['inbox_read', 'message_read'], send_policy: 'approval', ...approval },
  });
}

/** The whole browser part: authorize, consent, approve. Returns the code and its verifier. */
export async function authorizeCode(base: string, session: Session, opts: AuthorizeOptions & Approval): Promise<{ code: string; verifier: string; redirectTo: URL }> {
  const { verifier, challenge } = pkce();
  const requestId = await startConsent(base, session, { ...opts, challenge });
  const approved = await approve(base, session, requestId, {
    inbox_ids: opts.inbox_ids,
    ...(opts.permissions ? { permissions: opts.permissions } : {}),
    ...(opts.send_policy ? { send_policy: opts.send_policy } : {}),
  });
  if (approved.status !== 200) throw new Error(`approve answered ${approved.status} ${approved.text}`);
  const redirectTo = new URL(approved.body.redirect_to);
  return { code: redirectTo.searchParams.get('code')!, verifier, redirectTo };
}

export interface Tokens {
  access_token: string;
  refresh_token: string;
  token_type: string;
  expires_in: number;
  scope: string;
}

export function exchange(base: string, opts: { code: string; verifier: string; clientId: string; resource: string; redirectUri?: string }): Promise<ApiResponse<Tokens & { error?: string }>> {
  return form(base, '/oauth/token', {
    grant_type: 'authorization_code',
    code: opts.code,
    code_verifier: opts.verifier,
    client_id: opts.clientId,
    redirect_uri: opts.redirectUri ?? REDIRECT,
    resource: opts.resource,
  });
}

export function refresh(base: string, refreshToken: string, clientId: string, extra: Record<string, string> = {}): Promise<ApiResponse<Tokens & { error?: string }>> {
  return form(base, '/oauth/token', { grant_type: 'refresh_token', refresh_token: refreshToken, client_id: clientId, ...extra });
}

/**
 * An MCP SDK OAuth client provider that keeps everything in memory and records where it sent the
 * owner's browser, for tests that drive the SDK's own client-side flow.
 */
export class MemoryOAuthProvider implements OAuthClientProvider {
  readonly redirectUrl = REDIRECT;
  readonly clientMetadata: OAuthClientMetadata;
  info: OAuthClientInformationMixed | undefined;
  saved: OAuthTokens | undefined;
  readonly savedTokens: OAuthTokens[] = [];
  verifier = '';
  authorizationUrl: URL | undefined;

  constructor(
    clientName: string,
    private readonly stateValue: string,
  ) {
    this.clientMetadata = {
      client_name: clientName,
      redirect_uris: [REDIRECT],
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
      token_endpoint_auth_method: 'none',
    };
  }

  state(): string {
    return this.stateValue;
  }
  clientInformation() {
    return this.info;
  }
  saveClientInformation(info: OAuthClientInformationMixed) {
    this.info = info;
  }
  tokens() {
    return this.saved;
  }
  saveTokens(tokens: OAuthTokens) {
    this.saved = tokens;
    this.savedTokens.push(tokens);
  }
  redirectToAuthorization(url: URL) {
    this.authorizationUrl = url;
  }
  saveCodeVerifier(verifier: string) {
    this.verifier = verifier;
  }
  codeVerifier() {
    return this.verifier;
  }
}
