/** Small shared pieces: data loading, errors, notices, dates and sizes. */
import type { ComponentChildren } from 'preact';
import { useCallback, useEffect, useState } from 'preact/hooks';
import { ApiFailure } from './api';

export interface Loaded<T> {
  data: T | null;
  error: Error | null;
  loading: boolean;
  reload: () => void;
  set: (data: T) => void;
}

/** Loads `fn()` on mount and whenever `deps` change; `reload()` fetches again. */
export function useLoad<T>(fn: () => Promise<T>, deps: unknown[]): Loaded<T> {
  const [data, setData] = useState<T | null>(null);
  const [error, setError] = useState<Error | null>(null);
  const [loading, setLoading] = useState(true);
  const [tick, setTick] = useState(0);
  useEffect(() => {
    let alive = true;
    setLoading(true);
    fn().then(
      (d) => {
        if (!alive) return;
        setData(d);
        setError(null);
        setLoading(false);
      },
      (e: Error) => {
        if (!alive) return;
        setError(e);
        setLoading(false);
      },
    );
    return () => {
      alive = false;
    };
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [...deps, tick]);
  const reload = useCallback(() => setTick((t) => t + 1), []);
  return { data, error, loading, reload, set: setData };
}

/** Runs an action, keeping its error and busy flag for the form that started it. */
export function useAction(): { busy: boolean; error: Error | null; run: (fn: () => Promise<unknown>) => Promise<boolean>; clear: () => void } {
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<Error | null>(null);
  const run = useCallback(async (fn: () => Promise<unknown>) => {
    setBusy(true);
    setError(null);
    try {
      await fn();
      return true;
    } catch (e) {
      setError(e as Error);
      return false;
    } finally {
      setBusy(false);
    }
  }, []);
  return { busy, error, run, clear: () => setError(null) };
}

export function ErrorBox({ error }: { error: Error | null | undefined }) {
  if (!error) return null;
  const fix = error instanceof ApiFailure ? error.fix : undefined;
  const code = error instanceof ApiFailure ? error.code : undefined;
  return (
    <div class="error" role="alert">
      <strong>{error.message}</strong>
      {code && <span class="code"> ({code})</span>}
      {fix && <div class="fix">{fix}</div>}
    </div>
  );
}

export function Notice({ children }: { children: ComponentChildren }) {
  return (
    <div class="notice" role="status">
      {children}
    </div>
  );
}

export function Page({ title, actions, children }: { title: string; actions?: ComponentChildren; children: ComponentChildren }) {
  useEffect(() => {
    document.title = `${title} · svc`;
  }, [title]);
  return (
    <section class="page">
      <header class="page-head">
        <h1>{title}</h1>
        {actions && <div class="actions">{actions}</div>}
      </header>
      {children}
    </section>
  );
}

export function Loading({ loaded }: { loaded: { error: Error | null; loading: boolean; data: unknown } }) {
  if (loaded.error) return <ErrorBox error={loaded.error} />;
  if (loaded.loading && loaded.data === null) return <p class="muted">Loading…</p>;
  return null;
}

export function when(ts: string | null | undefined): string {
  if (!ts) return '—';
  const d = new Date(ts);
  const now = new Date();
  if (d.toDateString() === now.toDateString()) return d.toLocaleTimeString(undefined, { hour: '2-digit', minute: '2-digit' });
  return d.toLocaleString(undefined, { year: 'numeric', month: 'short', day: 'numeric', hour: '2-digit', minute: '2-digit' });
}

export function bytes(n: number): string {
  if (n < 1024) return `${n} B`;
  if (n < 1024 * 1024) return `${(n / 1024).toFixed(1)} KB`;
  return `${(n / 1024 / 1024).toFixed(1)} MB`;
}

export function Labels({ labels }: { labels: string[] }) {
  return (
    <span class="labels">
      {labels.map((l) => (
        <span class={`label label-${l.replace(/[^a-z_]/gi, '')}`} key={l}>
          {l}
        </span>
      ))}
    </span>
  );
}

/** Copies `text` to the clipboard, then says so for a moment (a DNS value, a secret). */
export function CopyButton({ text, label = 'Copy', what }: { text: string; label?: string; what?: string }) {
  const [copied, setCopied] = useState(false);
  useEffect(() => {
    if (!copied) return;
    const t = window.setTimeout(() => setCopied(false), COPIED_SHOWN_MS);
    return () => clearTimeout(t);
  }, [copied]);
  return (
    <button
      type="button"
      class="small copy"
      aria-label={what ? `Copy ${what}` : undefined}
      onClick={() => void navigator.clipboard?.writeText(text).then(() => setCopied(true), () => setCopied(false))}
    >
      {copied ? 'Copied' : label}
    </button>
  );
}
const COPIED_SHOWN_MS = 2000;

/** Confirms a destructive action in the browser's own dialog (works with keyboards and phones). */
export function confirmed(message: string): boolean {
  return window.confirm(message);
}

/** Follows a link as a download, as a click on `<a download>` would (a download URL, a blob). */
export function followDownload(url: string, filename = ''): void {
  const a = document.createElement('a');
  a.href = url;
  a.download = filename;
  document.body.appendChild(a);
  a.click();
  a.remove();
}

/** Offers text as a file download (zone files, secrets). */
export function downloadText(filename: string, text: string, type = 'text/plain'): void {
  const url = URL.createObjectURL(new Blob([text], { type }));
  followDownload(url, filename);
  setTimeout(() => URL.revokeObjectURL(url), 1000);
}

/** Values from a form's named fields. */
/** A form's submit handler: no page load; runs `fn` with the form's values under `action`. */
export function onSubmitWith(action: { run: (fn: () => Promise<unknown>) => Promise<boolean> }, fn: (values: Record<string, string>, form: HTMLFormElement) => Promise<unknown>) {
  return (e: Event) => {
    e.preventDefault();
    const form = e.currentTarget as HTMLFormElement;
    void action.run(() => fn(formValues(form), form));
  };
}

export function formValues(form: HTMLFormElement): Record<string, string> {
  const out: Record<string, string> = {};
  new FormData(form).forEach((v, k) => {
    if (typeof v === 'string') out[k] = v;
  });
  return out;
}
