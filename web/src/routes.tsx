/** Which page draws which path. Patterns use `:name` segments (decoded before the page sees them). */
import type { ComponentChildren } from 'preact';
import { AccountPage } from './pages/account';
import { ComposePage } from './pages/compose';
import { InboxesPage, ThreadsPage } from './pages/mail';
import { ThreadPage } from './pages/thread';

export interface RouteContext {
  signedOut: () => void;
  search: URLSearchParams;
}

type Render = (params: Record<string, string>, ctx: RouteContext) => ComponentChildren;

export const routes: [string, Render][] = [
  ['/inboxes', () => <InboxesPage />],
  ['/inboxes/:inbox', (p, ctx) => <ThreadsPage inboxId={p.inbox} search={ctx.search} />],
  ['/inboxes/:inbox/threads/:thread', (p) => <ThreadPage inboxId={p.inbox} threadId={p.thread} />],
  ['/compose', (_p, ctx) => <ComposePage search={ctx.search} />],
  ['/account', (_p, ctx) => <AccountPage onSignedOut={ctx.signedOut} />],
];
