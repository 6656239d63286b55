/**
 * The owner's requests on the outbound guard (issue 20 §4, docs/guarded.md), one function per
 * route of src/routes/owner-guard.ts: `GET` and `PATCH /owner/guard`. The routes' access is
 * `owner`, so there is no scope or permission to check. A change is checked first (no lookup),
 * then is ONE transaction opened here (src/mail/guard.ts opens none); it applies to the next send.
 */
import type { AppContext } from '../context.js';
import { checkGuardPatch, guardSettingsView, writeGuardSettings, type GuardSettingsPatch, type GuardSettingsView } from '../mail/guard.js';

export function readGuardFor(svc: Pick<AppContext, 'db'>): GuardSettingsView {
  return guardSettingsView(svc.db);
}

export function writeGuardFor(svc: Pick<AppContext, 'db'>, body: GuardSettingsPatch): GuardSettingsView {
  const { db } = svc;
  const patch = checkGuardPatch(body);
  return db.transaction(() => writeGuardSettings(db, patch))();
}
