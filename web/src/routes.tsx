/** Which page draws which path. Patterns use `:name` segments (decoded before the page sees them). */
import type { ComponentChildren } from 'preact';
import { AccountPage } from './pages/account';
import { ApiKeysPage } from './pages/api-keys';
import { ComposePage } from './pages/compose';
import { ConsentPage } from './pages/consent';
import { ApprovalsPage, ScheduledPage, SendUnknownPage } from './pages/control';
import { DashboardPage } from './pages/dashboard';
import { DomainsPage } from './pages/domains';
import { HealthPage } from './pages/health';
import { ListsPage } from './pages/lists';
import { InboxesPage } from './pages/mail';
import { MailPage } from './pages/mail-client';
import { OAuthPage, QuarantinePage, RemotePage, TransportPage } from './pages/settings';
import { WebhooksPage } from './pages/webhooks';

export interface RouteContext {
  signedOut: () => void;
  search: URLSearchParams;
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
  ['/approvals', () => <ApprovalsPage />],
  ['/send-unknown', () => <SendUnknownPage />],
  ['/scheduled', () => <ScheduledPage />],
  ['/api-keys', () => <ApiKeysPage />],
  ['/webhooks', () => <WebhooksPage />],
  ['/lists', () => <ListsPage />],
  ['/domains', () => <DomainsPage />],
  // The AgentMail SDK's setup link (GET /v0/domains/{id}/setup-link) opens one domain here.
  ['/domains/:domain', (p) => <DomainsPage openId={p.domain} />],
  ['/transport', () => <TransportPage />],
  ['/remote', () => <RemotePage />],
  ['/quarantine', () => <QuarantinePage />],
  ['/health', () => <HealthPage />],
  ['/apps', () => <OAuthPage />],
  ['/consent', (_p, ctx) => <ConsentPage requestId={ctx.search.get('request') ?? ''} />],
  ['/account', (_p, ctx) => <AccountPage onSignedOut={ctx.signedOut} />],
];
