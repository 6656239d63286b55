/** First run (setup with the printed code), login (password or a login link), spec §4.13, §5.1. */
import { useEffect, useState } from 'preact/hooks';
import { post, setCsrf } from '../api';
import { safeReturnTo } from '../router';
import { ErrorBox, formValues, useAction } from '../ui';
import type { SessionResponse } from '../api-types';

/** Where the owner goes once signed in: server paths (the OAuth authorize step) need a real load. */
export function goAfterLogin(returnTo: string | null, go: (to: string) => void): void {
  const target = safeReturnTo(returnTo) ?? '/';
  if (/^\/(oauth|v0|mcp|\.well-known)(\/|\?|$)/.test(target)) window.location.assign(target);
  else go(target);
}

export function SetupPage({ onSignedIn }: { onSignedIn: () => void }) {
  const action = useAction();
  return (
    <main class="auth">
      <form
        class="card"
        onSubmit={(e) => {
          e.preventDefault();
          const v = formValues(e.currentTarget);
          if (v.password !== v.confirm) return void action.run(() => Promise.reject(new Error('The two passwords differ.')));
          void action.run(async () => {
            const s = await post<SessionResponse>('/v0/owner/setup', { code: v.code.trim(), password: v.password });
            setCsrf(s.csrf_token);
            onSignedIn();
          });
        }}
      >
        <h1>Set up svc</h1>
        <p>
          Enter the setup code svc printed when it started (the <code>owner.setup_required</code> line; it changes on every restart) and choose the owner
          password.
        </p>
        <label>
          Setup code
          <input name="code" autocomplete="one-time-code" required autofocus placeholder="XXXXX-XXXXX" />
        </label>
        <label>
          Password (12 characters or more)
          <input name="password" type="password" autocomplete="new-password" minLength={12} maxLength={1024} required />
        </label>
        <label>
          Password again
          <input name="confirm" type="password" autocomplete="new-password" minLength={12} maxLength={1024} required />
        </label>
        <ErrorBox error={action.error} />
        <button class="primary" disabled={action.busy}>
          Set password and sign in
        </button>
      </form>
    </main>
  );
}

export function LoginPage({ returnTo, onSignedIn }: { returnTo: string | null; onSignedIn: (returnTo: string | null) => void }) {
  const action = useAction();
  const [redeeming, setRedeeming] = useState(false);

  // A login link is `/login#token=…`: the fragment never reaches a server log. Take it out of the
  // address bar at once, then trade it for a session.
  useEffect(() => {
    const redeemFromHash = () => {
      const token = new URLSearchParams(window.location.hash.slice(1)).get('token');
      if (!token) return;
      history.replaceState(null, '', window.location.pathname + window.location.search);
      setRedeeming(true);
      void action
        .run(async () => {
          const s = await post<SessionResponse>('/v0/owner/login-links/redeem', { token });
          setCsrf(s.csrf_token);
          onSignedIn(returnTo);
        })
        .finally(() => setRedeeming(false));
    };
    redeemFromHash();
    // Opening a link while this page is already shown only changes the fragment.
    window.addEventListener('hashchange', redeemFromHash);
    return () => window.removeEventListener('hashchange', redeemFromHash);
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, []);

  return (
    <main class="auth">
      <form
        class="card"
        onSubmit={(e) => {
          e.preventDefault();
          const v = formValues(e.currentTarget);
          void action.run(async () => {
            const s = await post<SessionResponse>('/v0/owner/login', { password: v.password });
            setCsrf(s.csrf_token);
            onSignedIn(returnTo);
          });
        }}
      >
        <h1>Sign in to svc</h1>
        {redeeming && <p class="muted">Using the login link…</p>}
        <label>
          Owner password
          <input name="password" type="password" autocomplete="current-password" required autofocus />
        </label>
        <ErrorBox error={action.error} />
        <button class="primary" disabled={action.busy}>
          Sign in
        </button>
        <p class="muted small">
          No password at hand? On this machine, run <code>svc open</code>: it opens the app signed in with a one-time link.
        </p>
      </form>
    </main>
  );
}
