/**
 * Sudo mode (docs/security.md): before the app mints a credential, runs a command or changes where
 * mail and secrets go, svc asks a browser session that signed in more than ten minutes ago to
 * prove the owner again. This dialog is the prompt api.ts calls; the request is then repeated once.
 */
import { useEffect, useRef, useState } from 'preact/hooks';
import { post, setSudoPrompt } from './api';
import { ErrorBox, formValues, useAction } from './ui';

export function SudoDialog() {
  const [pending, setPending] = useState<((ok: boolean) => void) | null>(null);
  const action = useAction();
  const input = useRef<HTMLInputElement>(null);

  useEffect(() => {
    setSudoPrompt(() => new Promise<boolean>((resolve) => setPending(() => resolve)));
    return () => setSudoPrompt(null);
  }, []);
  useEffect(() => {
    if (pending) input.current?.focus();
  }, [pending]);

  if (!pending) return null;
  const finish = (ok: boolean) => {
    action.clear();
    setPending(null);
    pending(ok);
  };
  return (
    <div class="modal-backdrop">
      <form
        class="card modal"
        role="dialog"
        aria-modal="true"
        aria-labelledby="sudo-title"
        data-testid="sudo-dialog"
        onSubmit={(e) => {
          e.preventDefault();
          const v = formValues(e.currentTarget);
          void action.run(async () => {
            await post('/v0/owner/sudo', { password: v.password });
            finish(true);
          });
        }}
      >
        <h2 id="sudo-title">Confirm it is you</h2>
        <p class="muted">This action creates credentials, runs a command or changes where mail goes. Enter your password to go on; you will not be asked again for ten minutes.</p>
        <label>
          Owner password
          <input ref={input} name="password" type="password" autocomplete="current-password" required />
        </label>
        <ErrorBox error={action.error} />
        <div class="row">
          <button class="primary" disabled={action.busy}>
            Confirm
          </button>
          <button type="button" onClick={() => finish(false)}>
            Cancel
          </button>
        </div>
      </form>
    </div>
  );
}
