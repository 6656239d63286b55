/** Which page draws which path. Patterns use `:name` segments (decoded before the page sees them). */
import type { ComponentChildren } from 'preact';
import { navigate } from './router';
import { AccountPage, BackupsPage } from './pages/account';
import { ApiKeysPage, GuardPage } from './pages/api-keys';
import { ComposePage } from './pages/compose';
import { ConsentPage } from './pages/consent';
import { ScheduledPage } from './pages/control';
import { DashboardPage } from './pages/dashboard';
import { DomainsPage } from './pages/domains';
import { HealthPage } from './pages/health';
import { ListsPage } from './pages/lists';
import { InboxesPage } from './pages/mail';
import { MailPage } from './pages/mail-client';
import { NeedsYouPage } from './pages/needs-you';
import { PodsPage } from './pages/pods';
import { OAuthPage, RemotePage, TransportPage } from './pages/settings';
import { WebhooksPage } from './pages/webhooks';

export interface RouteContext {
  signedOut: () => void;
  search: URLSearchParams;
  hash: string;
}

/** An old path that now lives elsewhere: links and bookmarks to it keep working. */
function redirect(to: string): ComponentChildren {
  queueMicrotask(() => navigate(to, true));
  return null;
}

type Render = (params: Record<string, string>, ctx: RouteContext) => ComponentChildren;

export const routes: [string, Render][] = [
  ['/dashboard', () => <DashboardPage />],
  ['/inboxes', () => <InboxesPage />],
  ['/mail', (_p, ctx) => <MailPage scope={{ kind: 'all' }} search={ctx.search} />],
  ['/mail/t/:inbox/:thread', (p, ctx) => <MailPage scope={{ kind: 'all' }} openThread={{ inboxId: p.inbox, threadId: p.thread }} search={ctx.search} />],
  ['/inboxes/:inbox', (p, ctx) => <MailPage scope={{ kind: 'inbox', inboxId: p.inbox }} search={ctx.search} />],
  ['/inboxes/:inbox/threads/:thread', (p, ctx) => <MailPage scope={{ kind: 'inbox', inboxId: p.inbox }} openThread={{ inboxId: p.inbox, threadId: p.thread }} search={ctx.search} />],
  ['/compose', (_p, ctx) => <ComposePage search={ctx.search} />],
  ['/needs-you', (_p, ctx) => <NeedsYouPage hash={ctx.hash} />],
  // The queues had pages of their own; each is a section of "Needs you" now.
  ['/approvals', () => redirect('/needs-you#approvals')],
  ['/send-unknown', () => redirect('/needs-you#send-unknown')],
  ['/quarantine', () => redirect('/needs-you#quarantine')],
  ['/scheduled', () => <ScheduledPage />],
  ['/api-keys', () => <ApiKeysPage />],
  ['/pods', () => <PodsPage />],
  ['/guard', () => <GuardPage />],
  ['/webhooks', () => <WebhooksPage />],
  ['/lists', () => <ListsPage />],
  ['/domains', () => <DomainsPage />],
  // The AgentMail SDK's setup link (GET /v0/domains/{id}/setup-link) opens one domain here.
  ['/domains/:domain', (p) => <DomainsPage openId={p.domain} />],
  ['/transport', () => <TransportPage />],
  ['/remote', () => <RemotePage />],
  ['/health', () => <HealthPage />],
  ['/apps', () => <OAuthPage />],
  ['/consent', (_p, ctx) => <ConsentPage requestId={ctx.search.get('request') ?? ''} />],
  ['/backups', () => <BackupsPage />],
  ['/account', (_p, ctx) => <AccountPage onSignedOut={ctx.signedOut} />],
];
