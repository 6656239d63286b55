/**
 * The shell: decides between setup, login and the signed-in app from GET /v0/owner/status, draws
 * the navigation (a menu button on narrow screens) and picks the page for the current path.
 */
import type { ComponentChildren } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import { get, loadStatus, onSignedOut, setCsrf, type OwnerStatus } from './api';
import { startLive, stopLive, useLiveEvents, useLiveState } from './live';
import { match, navigate, useLocation } from './router';
import { ErrorBox } from './ui';
import { SudoDialog } from './sudo';
import { goAfterLogin, LoginPage, SetupPage } from './pages/auth';
import { routes, type RouteContext } from './routes';

const NAV: { href: string; label: string }[] = [
  { href: '/inboxes', label: 'Mail' },
  { href: '/dashboard', label: 'Dashboard' },
  { href: '/approvals', label: 'Approvals' },
  { href: '/send-unknown', label: 'Send unknown' },
  { href: '/scheduled', label: 'Scheduled' },
  { href: '/api-keys', label: 'API keys' },
  { href: '/webhooks', label: 'Webhooks' },
  { href: '/lists', label: 'Lists' },
  { href: '/domains', label: 'Domains' },
  { href: '/transport', label: 'Transport' },
  { href: '/remote', label: 'Remote access' },
  { href: '/quarantine', label: 'Quarantine' },
  { href: '/health', label: 'Health' },
  { href: '/apps', label: 'OAuth apps' },
  { href: '/account', label: 'Account' },
];

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
      <Shell path={loc.path}>{pageFor(loc.path, { signedOut, search: loc.query })}</Shell>
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
        There is no page at <code>{path}</code>. <a href="/inboxes">Go to mail</a>.
      </p>
    </section>
  );
}

/**
 * Items waiting in quarantine (`total` of GET /v0/owner/quarantine), kept current by the
 * `inbound.*` events, so mail svc could not process is seen without opening the page.
 * Null until known or when the question fails (the nav then shows the plain label).
 */
function useQuarantineTotal(): number | null {
  const [total, setTotal] = useState<number | null>(null);
  const reload = () =>
    void get<{ total: number }>('/v0/owner/quarantine?limit=1').then(
      (r) => setTotal(r.total),
      () => setTotal(null),
    );
  useEffect(reload, []);
  useLiveEvents(['inbound.quarantined', 'inbound.released', 'inbound.deleted'], reload);
  return total;
}

function Shell({ path, children }: { path: string; children: ComponentChildren }) {
  const [open, setOpen] = useState(false);
  const live = useLiveState();
  const quarantined = useQuarantineTotal();
  useEffect(() => setOpen(false), [path]);
  return (
    <div class={`shell${open ? ' nav-open' : ''}`}>
      <header class="topbar">
        <button class="menu" aria-label="Menu" aria-expanded={open} onClick={() => setOpen(!open)}>
          ☰
        </button>
        <a href="/inboxes" class="brand">
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
        {NAV.map((n) => (
          <a key={n.href} href={n.href} class={path === n.href || path.startsWith(`${n.href}/`) ? 'active' : ''}>
            {n.href === '/quarantine' && quarantined ? (
              <>
                {n.label}{' '}
                <span class="badge bad" data-testid="quarantine-count" aria-label={`${quarantined} items in quarantine`}>
                  {quarantined}
                </span>
              </>
            ) : (
              n.label
            )}
          </a>
        ))}
      </nav>
      <main class="content">{children}</main>
    </div>
  );
}
