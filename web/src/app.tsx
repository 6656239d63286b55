/**
 * The shell: decides between setup, login and the signed-in app from GET /v0/owner/status, draws
 * the navigation (a menu button on narrow screens) and picks the page for the current path.
 */
import type { ComponentChildren } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import { loadStatus, onSignedOut, setCsrf, type OwnerStatus } from './api';
import { startLive, stopLive, useLiveState } from './live';
import { useWorkQueues, waitingCount } from './work-queues';
import { match, navigate, useLocation } from './router';
import { ErrorBox } from './ui';
import { SudoDialog } from './sudo';
import { goAfterLogin, LoginPage, SetupPage } from './pages/auth';
import { routes, type RouteContext } from './routes';

interface NavItem {
  href: string;
  label: string;
  /** Other paths that belong to this item (an old address, a page reached from it). */
  also?: string[];
  /** Only this path itself: the inboxes page, whose sub-paths are the mail client (Mail). */
  exact?: boolean;
}

/** What the owner uses every day, above the settings. */
const NAV_MAIN: NavItem[] = [
  { href: '/mail', label: 'Mail', also: ['/compose', '/inboxes/'] },
  { href: '/needs-you', label: 'Needs you', also: ['/approvals', '/send-unknown', '/quarantine'] },
  { href: '/scheduled', label: 'Scheduled' },
  { href: '/dashboard', label: 'Dashboard' },
];

/** Settings, grouped by what they are about and named in plain words (paths kept as they were). */
const NAV_GROUPS: [string, NavItem[]][] = [
  [
    'Agents',
    [
      { href: '/api-keys', label: 'API keys' },
      { href: '/pods', label: 'Pods' },
      { href: '/apps', label: 'Connected apps' },
      { href: '/guard', label: 'Outbound guard' },
      { href: '/webhooks', label: 'Webhooks' },
    ],
  ],
  [
    'Mail settings',
    [
      { href: '/inboxes', label: 'Inboxes', exact: true },
      { href: '/domains', label: 'Domains' },
      { href: '/lists', label: 'Allow and block lists' },
      { href: '/transport', label: 'Delivery' },
    ],
  ],
  [
    'System',
    [
      { href: '/remote', label: 'Remote access' },
      { href: '/health', label: 'Health' },
      { href: '/backups', label: 'Backups' },
      { href: '/account', label: 'Account' },
    ],
  ],
];

const within = (path: string, href: string) => path === href || path.startsWith(`${href}/`);
const isActive = (path: string, n: NavItem) => (n.exact ? path === n.href : within(path, n.href)) || (n.also ?? []).some((a) => (a.endsWith('/') ? path.startsWith(a) : within(path, a)));

export function App() {
  const loc = useLocation();
  const [status, setStatus] = useState<OwnerStatus | null>(null);
  const [error, setError] = useState<Error | null>(null);

  const refresh = () =>
    loadStatus().then(
      (s) => {
        setStatus(s);
        setError(null);
        if (s.authenticated) startLive();
        else stopLive();
      },
      (e: Error) => setError(e),
    );

  useEffect(() => {
    void refresh();
    return onSignedOut(() => {
      setCsrf(null);
      stopLive();
      setStatus((s) => (s ? { ...s, authenticated: false } : s));
    });
  }, []);

  if (error) return <main class="auth"><ErrorBox error={error} /></main>;
  if (!status) return <main class="auth"><p class="muted">Loading…</p></main>;

  const signedIn = (returnTo: string | null) => {
    void refresh().then(() => goAfterLogin(returnTo, (to) => navigate(to, true)));
  };

  if (status.setup_required) return <SetupPage onSignedIn={() => signedIn(null)} />;
  if (!status.authenticated) {
    const returnTo = loc.path === '/login' ? loc.query.get('return_to') : loc.path + window.location.search;
    if (loc.path !== '/login') history.replaceState(null, '', `/login${returnTo && returnTo !== '/' ? `?return_to=${encodeURIComponent(returnTo)}` : ''}${window.location.hash}`);
    return <LoginPage returnTo={returnTo} onSignedIn={signedIn} />;
  }
  if (loc.path === '/login' || loc.path === '/setup') {
    // Already signed in (a second tab, or the back button): go where the link wanted.
    queueMicrotask(() => goAfterLogin(loc.query.get('return_to'), (to) => navigate(to, true)));
    return null;
  }

  const signedOut = () => {
    setCsrf(null);
    stopLive();
    setStatus({ ...status, authenticated: false });
    navigate('/login', true);
  };
  return (
    <>
      <Shell path={loc.path}>{pageFor(loc.path, { signedOut, search: loc.query, hash: loc.hash })}</Shell>
      <SudoDialog />
    </>
  );
}

function pageFor(path: string, ctx: RouteContext): ComponentChildren {
  if (path === '/') {
    queueMicrotask(() => navigate('/mail', true));
    return null;
  }
  for (const [pattern, render] of routes) {
    const params = match(pattern, path);
    if (params) return render(params, ctx);
  }
  return (
    <section class="page">
      <h1>Not found</h1>
      <p>
        There is no page at <code>{path}</code>. <a href="/mail">Go to mail</a>.
      </p>
    </section>
  );
}

function Shell({ path, children }: { path: string; children: ComponentChildren }) {
  const [open, setOpen] = useState(false);
  const live = useLiveState();
  const queues = useWorkQueues();
  const waiting = queues.data ? waitingCount(queues.data) : 0;
  useEffect(() => setOpen(false), [path]);
  return (
    <div class={`shell${open ? ' nav-open' : ''}`}>
      <header class="topbar">
        <button class="menu" aria-label="Menu" aria-expanded={open} onClick={() => setOpen(!open)}>
          ☰
        </button>
        <a href="/mail" class="brand">
          svc
        </a>
        <span class={`live live-${live}`} title={`Live updates: ${live}`} data-live={live}>
          {live === 'live' ? 'live' : live === 'off' ? 'offline' : live === 'impostor' ? 'not svc' : '…'}
        </span>
      </header>
      {live === 'impostor' && (
        <div class="impostor-banner" role="alert" data-testid="impostor-banner">
          Something other than svc is answering at this address. This page sends nothing to it and waits for svc to come back.
        </div>
      )}
      <nav class="nav" aria-label="Main">
        <div class="nav-inner">
          {NAV_MAIN.map((n) => (
            <a key={n.href} href={n.href} class={isActive(path, n) ? 'active' : ''} aria-current={isActive(path, n) ? 'page' : undefined}>
              {n.label}
              {n.href === '/needs-you' && waiting > 0 && (
                <span class="badge bad nav-count" data-testid="needs-you-count" title={`${waiting} waiting for you`}>
                  {waiting}
                </span>
              )}
            </a>
          ))}
          {NAV_GROUPS.map(([group, items]) => (
            <div role="group" aria-label={group} key={group} class="nav-group">
              <div class="nav-heading" aria-hidden="true">
                {group}
              </div>
              {items.map((n) => (
                <a key={n.href} href={n.href} class={isActive(path, n) ? 'active' : ''} aria-current={isActive(path, n) ? 'page' : undefined}>
                  {n.label}
                </a>
              ))}
            </div>
          ))}
        </div>
      </nav>
      <main class="content">{children}</main>
    </div>
  );
}
