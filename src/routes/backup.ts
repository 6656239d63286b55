/**
 * Backups and the recovery code (docs/backup.md), registered on the loopback listener only:
 * `GET /owner/backup` (the last backup, for the web app's Account page and `svc status`),
 * `POST /owner/backup` (makes a backup and streams the file; the owner's CLI only) and
 * `POST /owner/recovery-code` (a recovery code for a home made before they existed, or a new one).
 */
import fs from 'node:fs';
import type { FastifyPluginAsync } from 'fastify';
import { Type, type Static } from 'typebox';
import { ApiError } from '../core/errors.js';
import { RECOVERY_MESSAGE, RecoveryExists } from '../backup/recovery-file.js';
import { BackupBusy, NoRecoveryCode, readLastBackup, recordBackup, type BackupService } from '../backup/service.js';

export const BackupStatusResponse = Type.Object(
  {
    last_backup_at: Type.Union([Type.String(), Type.Null()]),
    last_backup_size: Type.Union([Type.Integer(), Type.Null()]),
    recovery_code_set: Type.Boolean(),
  },
  { additionalProperties: false },
);
export type BackupStatus = Static<typeof BackupStatusResponse>;
const RecoveryCodeBody = Type.Object({ rotate: Type.Optional(Type.Boolean()) }, { additionalProperties: false });
const RecoveryCodeResponse = Type.Object({ recovery_code: Type.String(), message: Type.String() }, { additionalProperties: false });
const Empty = Type.Object({}, { additionalProperties: false });

const noRecoveryCode = () =>
  new ApiError('action_required', 'This home has no recovery code yet, and a backup without one could not be restored on another machine.', {
    fix: 'Run `svc key recovery` once, keep the code it prints, then run `svc backup` again.',
  });

export function backupRoutes(backups: BackupService): FastifyPluginAsync {
  return async (app) => {
    const { db } = app.svc;

    app.get('/backup', { config: { auth: 'owner' }, schema: { response: { 200: BackupStatusResponse } } }, async (): Promise<BackupStatus> => {
      const last = readLastBackup(db);
      return { last_backup_at: last?.at ?? null, last_backup_size: last?.size ?? null, recovery_code_set: backups.hasRecoveryCode() };
    });

    app.post<{ Body: Static<typeof Empty> }>('/backup', { config: { auth: 'owner_bearer' }, schema: { body: Empty } }, async (request, reply) => {
      let made;
      try {
        made = await backups.make(null);
      } catch (err) {
        if (err instanceof NoRecoveryCode) throw noRecoveryCode();
        if (err instanceof BackupBusy) throw new ApiError('conflict', 'A backup is being made already.', { fix: 'Wait for it to finish, then try again.' });
        request.log.warn({ event: 'backup.failed' }, 'a backup could not be made');
        throw new ApiError('service_unavailable', 'The backup could not be made.', { fix: 'Check the free disk space in the home (a backup needs about the size of svc.db twice), then try again.' });
      }
      const { file, size, manifest } = made;
      // Counted as made once the whole file went out; the file leaves the home either way.
      reply.raw.once('finish', () => {
        try {
          recordBackup(db, { at: manifest.created_at, size });
        } catch {
          // Only the record is lost (the backup itself was handed over); never a crash from an event handler.
          request.log.warn({ event: 'backup.record_failed' }, 'the time of a finished backup could not be recorded');
        }
      });
      reply.raw.once('close', () => void fs.promises.rm(file, { force: true }).catch(() => undefined));
      return reply
        .header('content-type', 'application/octet-stream')
        .header('content-length', String(size))
        .header('cache-control', 'no-store')
        .header('x-svc-backup-created-at', manifest.created_at)
        .send(fs.createReadStream(file));
    });

    app.post<{ Body: Static<typeof RecoveryCodeBody> }>(
      '/recovery-code',
      { config: { auth: 'owner_bearer' }, schema: { body: RecoveryCodeBody, response: { 200: RecoveryCodeResponse } } },
      async (request) => {
        try {
          return { recovery_code: backups.addRecoveryCode(request.body.rotate === true), message: RECOVERY_MESSAGE };
        } catch (err) {
          if (err instanceof RecoveryExists) {
            throw new ApiError('already_exists', 'This home has a recovery code already.', {
              fix: 'Use the code shown when the home was made. To replace it, run `svc key recovery --rotate`: backups made before then keep needing the old code.',
            });
          }
          throw err;
        }
      },
    );
  };
}
