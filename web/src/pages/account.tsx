/** The owner's own account (browser sessions, password change, sign out) and the Backups page. */
import { del, get, post } from '../api';
import { ErrorBox, Notice, Page, Loading, confirmed, formValues, useAction, useLoad, when } from '../ui';
import { useState } from 'preact/hooks';
import type { Session } from '../api-types';

/** GET /v0/owner/backup (src/routes/backup.ts). */
interface BackupStatus {
  last_backup_at: string | null;
  last_backup_size: number | null;
  recovery_code_set: boolean;
}

/** How long ago, in the largest whole unit. */
function age(ts: string): string {
  const s = Math.max(0, Math.round((Date.now() - Date.parse(ts)) / 1000));
  if (s < 120) return `${s} seconds`;
  if (s < 2 * 3600) return `${Math.round(s / 60)} minutes`;
  if (s < 2 * 86400) return `${Math.round(s / 3600)} hours`;
  return `${Math.round(s / 86400)} days`;
}

export function AccountPage({ onSignedOut }: { onSignedOut: () => void }) {
  const sessions = useLoad(() => get<{ sessions: Session[] }>('/v0/owner/sessions'), []);
  const action = useAction();
  const pw = useAction();
  const [changed, setChanged] = useState(false);

  return (
    <Page
      title="Account"
      actions={
        <button
          onClick={() =>
            void action.run(async () => {
              await post('/v0/owner/logout');
              onSignedOut();
            })
          }
        >
          Sign out
        </button>
      }
    >
      <h2>Sessions</h2>
      <Loading loaded={sessions} />
      <ErrorBox error={action.error} />
      <div class="table-wrap">
        <table class="list" data-testid="sessions">
          <thead>
            <tr>
              <th>Session</th>
              <th>Browser (hash)</th>
              <th>Last seen</th>
              <th>Expires</th>
              <th>
                <span class="visually-hidden">Actions</span>
              </th>
            </tr>
          </thead>
          <tbody>
            {sessions.data?.sessions.map((s) => (
              <tr key={s.session_id} data-session={s.session_id}>
                <td>
                  <code>{s.session_id.slice(-12)}</code> {s.current && <span class="badge">this browser</span>}
                </td>
                <td>
                  <code>{s.user_agent ? s.user_agent.slice(0, 12) : '—'}</code>
                </td>
                <td>{when(s.last_seen_at)}</td>
                <td>{when(s.expires_at)}</td>
                <td>
                  <button
                    class="danger small"
                    onClick={() =>
                      confirmed(s.current ? 'Sign this browser out?' : 'Sign that session out?') &&
                      void action.run(async () => {
                        await del(`/v0/owner/sessions/${encodeURIComponent(s.session_id)}`);
                        if (s.current) onSignedOut();
                        else sessions.reload();
                      })
                    }
                  >
                    Sign out
                  </button>
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>

      <p class="small muted">
        Backups have <a href="/backups">their own page</a>.
      </p>

      <h2>Change password</h2>
      <form
        class="card narrow"
        onSubmit={(e) => {
          e.preventDefault();
          const form = e.currentTarget;
          const v = formValues(form);
          setChanged(false);
          if (v.password !== v.confirm) return void pw.run(() => Promise.reject(new Error('The two new passwords differ.')));
          void pw.run(async () => {
            await post('/v0/owner/password', { current_password: v.current_password, password: v.password });
            form.reset();
            setChanged(true);
            sessions.reload();
          });
        }}
      >
        <label>
          Current password
          <input name="current_password" type="password" autocomplete="current-password" required />
        </label>
        <label>
          New password (12 characters or more)
          <input name="password" type="password" autocomplete="new-password" minLength={12} maxLength={1024} required />
        </label>
        <label>
          New password again
          <input name="confirm" type="password" autocomplete="new-password" minLength={12} maxLength={1024} required />
        </label>
        <ErrorBox error={pw.error} />
        {changed && <Notice>Password changed. Every other session was signed out.</Notice>}
        <button class="primary" disabled={pw.busy}>
          Change password
        </button>
      </form>
    </Page>
  );
}

/** When the home was last backed up, and how to make and restore a backup (docs/backup.md). */
export function BackupsPage() {
  const backup = useLoad(() => get<BackupStatus>('/v0/owner/backup'), []);
  return (
    <Page title="Backups">
      <Loading loaded={backup} />
      {backup.data && (
        <div class="card narrow" data-testid="backup">
          <p data-testid="last-backup">
            {backup.data.last_backup_at ? (
              <>
                Last backup {age(backup.data.last_backup_at)} ago ({when(backup.data.last_backup_at)}).
              </>
            ) : (
              <>No backup yet.</>
            )}
          </p>
          {!backup.data.recovery_code_set && (
            <p>
              This home has no recovery code, so a backup could not be restored elsewhere: run <code>svc key recovery</code>.
            </p>
          )}
          <p>
            Make one with <code>svc backup --to FILE</code> (while svc runs); restore it with <code>svc restore</code> and the recovery code.
          </p>
        </div>
      )}
    </Page>
  );
}
