/**
 * The checks of the running service's own state (docs/doctor.md): the last backup's age, every
 * background loop running and not stuck, and inbound mail waiting in quarantine.
 */
import { LOOPS, type LoopHealth } from '../supervisor/loop-table.js';
import { BACKUP_MAX_AGE_DAYS, LOOP_LATE_MS, LOOP_PASS_STUCK_MS } from './limits.js';
import type { DoctorCheck } from './schemas.js';

type Status = DoctorCheck['status'];

/** A span the way an operator reads it: the largest whole unit. */
export function spanText(ms: number): string {
  const s = Math.max(0, Math.round(ms / 1000));
  if (s < 120) return `${s} s`;
  if (s < 2 * 3600) return `${Math.round(s / 60)} min`;
  if (s < 2 * 86400) return `${Math.round(s / 3600)} h`;
  return `${Math.round(s / 86400)} days`;
}

export function backupCheck(lastBackupAt: string | null, now = Date.now()): DoctorCheck {
  const check = (status: Status, detail: string, fix: string | null): DoctorCheck => ({ id: 'backup', title: 'Last backup', status, detail, fix });
  const fix = 'Run `svc backup --to FILE` and keep the file away from this machine (docs/backup.md).';
  if (lastBackupAt === null) return check('warn', 'This home has never been backed up.', fix);
  const age = now - Date.parse(lastBackupAt);
  if (age > BACKUP_MAX_AGE_DAYS * 86_400_000) return check('warn', `The last backup was made ${spanText(age)} ago (${lastBackupAt}), more than ${BACKUP_MAX_AGE_DAYS} days.`, fix);
  return check('pass', `The last backup was made ${spanText(age)} ago (${lastBackupAt}).`, null);
}

/**
 * Each loop: its thread runs, its current pass began less than LOOP_PASS_STUCK_MS ago, and a new
 * pass began within its idle wait plus LOOP_LATE_MS. A loop whose pass throws stops the whole
 * service (so an answering service has no crashed loop); what is left to see is a loop that hangs.
 */
export function loopsCheck(loops: LoopHealth[], now = Date.now()): DoctorCheck {
  const check = (status: Status, detail: string, fix: string | null): DoctorCheck => ({ id: 'loops', title: 'Background loops', status, detail, fix });
  const restart = 'Restart svc (`svc service restart`, or stop and start `svc serve`); if it happens again, check the log for the loop named here.';
  const stopped = loops.filter((l) => l.thread === 'stopped').map((l) => l.loop);
  if (stopped.length > 0) return check('fail', `Not running: ${stopped.join(', ')}.`, restart);
  const starting = loops.filter((l) => l.thread === 'starting').map((l) => l.loop);
  if (starting.length > 0) return check('warn', `Still starting: ${starting.join(', ')}.`, 'Wait a few seconds and check again.');
  const stuck: string[] = [];
  const late: string[] = [];
  for (const l of loops) {
    const inPass = l.passStartedAt !== null && (l.passEndedAt === null || l.passEndedAt < l.passStartedAt);
    if (inPass && now - l.passStartedAt! > LOOP_PASS_STUCK_MS) stuck.push(`${l.loop} (in one pass for ${spanText(now - l.passStartedAt!)})`);
    else if (!inPass && l.passEndedAt !== null && now - l.passEndedAt > LOOPS[l.loop].idleMs + LOOP_LATE_MS) late.push(`${l.loop} (no pass for ${spanText(now - l.passEndedAt)})`);
    // No pass at all yet: the thread started a moment ago and its first pass begins at once.
  }
  if (stuck.length > 0) return check('fail', `Stuck: ${stuck.join(', ')}.`, restart);
  if (late.length > 0) return check('warn', `Late: ${late.join(', ')}.`, restart);
  return check('pass', `All ${loops.length} loops are running (${loops.map((l) => l.loop).join(', ')}).`, null);
}

export function quarantineCheck(waiting: number): DoctorCheck {
  const check = (status: Status, detail: string, fix: string | null): DoctorCheck => ({ id: 'quarantine', title: 'Quarantine', status, detail, fix });
  if (waiting === 0) return check('pass', 'No inbound mail is waiting in quarantine.', null);
  return check('warn', `${waiting} inbound ${waiting === 1 ? 'message waits' : 'messages wait'} in quarantine: svc could not process ${waiting === 1 ? 'it' : 'them'}.`, 'See why with `svc quarantine list`, then `svc quarantine retry ID` or `svc quarantine delete ID` (docs/inbound.md).');
}
