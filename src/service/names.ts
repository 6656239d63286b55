/**
 * The naming rule for background-service definitions: only the default production home gets the
 * plain name, so several homes can be installed side by side without overwriting each other.
 */
import path from 'node:path';
import { defaultHome, homeSuffix } from '../keys/home.js';

/** The plain name; every other home appends `-<homeSuffix(home)>`. */
export const PLAIN_SERVICE_NAME = 'svc';

/**
 * launchd labels are reverse-DNS by convention; `local.` is the customary prefix for jobs that do
 * not belong to a vendor domain.
 */
export const LAUNCHD_LABEL_PREFIX = 'local.';

export interface ServiceNames {
  /** `svc` or `svc-<16 hex>`: also the Windows task name. */
  base: string;
  systemdUnit: string;
  launchdLabel: string;
  windowsTask: string;
}

export function serviceNames(home: string, env: NodeJS.ProcessEnv = process.env): ServiceNames {
  const isDefault = path.resolve(home) === path.resolve(defaultHome('production', env));
  const base = isDefault ? PLAIN_SERVICE_NAME : `${PLAIN_SERVICE_NAME}-${homeSuffix(home)}`;
  return { base, systemdUnit: `${base}.service`, launchdLabel: `${LAUNCHD_LABEL_PREFIX}${base}`, windowsTask: base };
}
