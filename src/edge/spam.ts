/**
 * The optional spam verdict: rspamd's HTTP API (`POST /checkv2`). A checker that is down or
 * slow never costs a message — the verdict is then `unknown` and the home treats it as not spam.
 */
import { Type } from 'typebox';
import { Value } from 'typebox/value';
import { SPAM_CHECK_TIMEOUT_MS } from './limits.js';
import type { SpamVerdict } from './sealed.js';

/** The part of rspamd's reply the verdict needs. */
const RspamdReply = Type.Object({
  action: Type.String(),
  score: Type.Optional(Type.Number()),
});

/** rspamd actions that mean "this is spam"; `greylist` and `soft reject` are timing advice, not verdicts. */
const SPAM_ACTIONS = new Set(['reject', 'add header', 'rewrite subject']);

export interface SpamFacts {
  clientIp: string;
  helo: string;
  mailFrom: string;
  recipients: string[];
}

export async function checkSpam(rspamdUrl: string, raw: Buffer, facts: SpamFacts, timeoutMs = SPAM_CHECK_TIMEOUT_MS): Promise<NonNullable<SpamVerdict>> {
  const unknown = { verdict: 'unknown' as const, score: null, action: null };
  const headers = new Headers({ 'content-type': 'message/rfc822', ip: facts.clientIp, helo: facts.helo, from: facts.mailFrom });
  for (const rcpt of facts.recipients) headers.append('rcpt', rcpt);
  let reply: unknown;
  try {
    const res = await fetch(new URL('checkv2', rspamdUrl.endsWith('/') ? rspamdUrl : rspamdUrl + '/'), {
      method: 'POST',
      headers,
      body: raw,
      signal: AbortSignal.timeout(timeoutMs),
    });
    if (!res.ok) return unknown;
    reply = await res.json();
  } catch {
    return unknown;
  }
  if (!Value.Check(RspamdReply, reply)) return unknown;
  return { verdict: SPAM_ACTIONS.has(reply.action) ? 'spam' : 'ham', score: reply.score ?? null, action: reply.action };
}
