/**
 * The response schema of the remote-access routes (spec §4.13; src/routes/remote.ts; fields in
 * docs/remote-access.md). The route pins it to RemoteView at compile time; the web app reads
 * its type from it.
 */
import { Type, type Static } from 'typebox';
import { NullableInteger, NullableString } from '../core/schemas.js';

export const RemoteResponse = Type.Object({
  enabled: Type.Boolean(),
  hostname: NullableString,
  url: NullableString,
  command: NullableString,
  connector: Type.Object({
    state: Type.Union([Type.Literal('stopped'), Type.Literal('starting'), Type.Literal('running'), Type.Literal('backoff')]),
    pid: NullableInteger,
    restarts: Type.Integer(),
    last_exit_code: NullableInteger,
    last_exit_signal: NullableString,
    last_started_at: NullableString,
    last_exited_at: NullableString,
    next_restart_at: NullableString,
    backoff_ms: NullableInteger,
  }),
  listener: Type.Object({ port: NullableInteger }),
});
export type RemoteResponse = Static<typeof RemoteResponse>;
