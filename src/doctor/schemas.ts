/**
 * The shape of `GET /v0/owner/doctor` (docs/doctor.md): one entry per check a mail operator makes,
 * each with a status, what was found and how to fix it. Typed from these schemas; the route's
 * response schema lets nothing else through, so no secret can reach the wire by mistake.
 */
import { Type, type Static } from 'typebox';

/** A DNS record of a domain's plan that DNS does not publish as planned. */
const FailingRecord = Type.Object(
  { type: Type.String(), name: Type.String(), reason: Type.String() },
  { additionalProperties: false },
);

export const DoctorCheck = Type.Object(
  {
    /** Stable: `credential_store`, `edge`, `outbound`, `domain:<name>`, `selftest:<name>`, … */
    id: Type.String(),
    title: Type.String(),
    status: Type.Union([Type.Literal('pass'), Type.Literal('warn'), Type.Literal('fail'), Type.Literal('skip')]),
    detail: Type.String(),
    /** What to do about it: a command or a step; null when there is nothing to do. */
    fix: Type.Union([Type.String(), Type.Null()]),
    /** Days until the edge's TLS certificate expires (negative: expired), when it has one. */
    days_left: Type.Optional(Type.Integer()),
    /** The domain's planned records DNS does not match, with the check's reason. */
    failing_records: Type.Optional(Type.Array(FailingRecord)),
  },
  { additionalProperties: false },
);
export type DoctorCheck = Static<typeof DoctorCheck>;
export type CheckStatus = DoctorCheck['status'];

export const DoctorReport = Type.Object(
  {
    /** True only when no check warned or failed (skipped checks do not apply). */
    ok: Type.Boolean(),
    checked_at: Type.String(),
    checks: Type.Array(DoctorCheck),
  },
  { additionalProperties: false },
);
export type DoctorReport = Static<typeof DoctorReport>;

/** The report of a list of checks: ok only when each passed or did not apply. */
export function doctorReport(checks: DoctorCheck[], at = new Date()): DoctorReport {
  return { ok: checks.every((c) => c.status === 'pass' || c.status === 'skip'), checked_at: at.toISOString(), checks };
}
