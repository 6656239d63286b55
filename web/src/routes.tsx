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
import { InboxesPage, ThreadsPage } from './pages/mail';
import { OAuthPage, QuarantinePage, RemotePage, TransportPage } from './pages/settings';
import { ThreadPage } from './pages/thread';
import { WebhooksPage } from './pages/webhooks';

export interface RouteContext {
  signedOut: () => void;
  search: URLSearchParams;
}

type Render = (params: Record<string, string>, ctx: RouteContext) => ComponentChildren;

export const routes: [string, Render][] = [
  ['/dashboard', () => <DashboardPage />],
  ['/inboxes', () => <InboxesPage />],
  ['/inboxes/:inbox', (p, ctx) => <ThreadsPage inboxId={p.inbox} search={ctx.search} />],
  ['/inboxes/:inbox/threads/:thread', (p) => <ThreadPage inboxId={p.inbox} threadId={p.thread} />],
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
