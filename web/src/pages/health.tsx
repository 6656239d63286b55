/** Health: the checks `svc doctor` makes (GET /v0/owner/doctor), each with its status, what was found and the fix. */
import { get } from '../api';
import { Loading, Page, useLoad, when } from '../ui';
import type { DoctorCheck, DoctorReport } from '../api-types';

const STATUS: Record<DoctorCheck['status'], { label: string; badge: string }> = {
  pass: { label: 'pass', badge: 'good' },
  warn: { label: 'warning', badge: 'warn' },
  fail: { label: 'failed', badge: 'bad' },
  skip: { label: 'does not apply', badge: '' },
};

export function HealthPage() {
  const report = useLoad(() => get<DoctorReport>('/v0/owner/doctor'), []);
  const r = report.data;
  const attention = r?.checks.filter((c) => c.status === 'warn' || c.status === 'fail').length ?? 0;
  return (
    <Page
      title="Health"
      actions={
        <button onClick={() => report.reload()} disabled={report.loading} data-testid="check-again">
          {report.loading && r ? 'Checking…' : 'Check again'}
        </button>
      }
    >
      <p class="muted">
        What a mail operator checks: the credential store, the edge and its certificate, each domain's DNS records and self-test, the outbound login, disk space, the last backup,
        the background loops and quarantine. The same checks run with <code>svc doctor</code>.
      </p>
      <Loading loaded={report} />
      {r && (
        <p data-testid="health-summary" data-ok={String(r.ok)}>
          <span class={`badge ${r.ok ? 'good' : 'warn'}`}>{r.ok ? 'All checks pass' : `${attention} ${attention === 1 ? 'check needs' : 'checks need'} attention`}</span>{' '}
          <span class="small muted" data-testid="checked-at" data-at={r.checked_at}>
            checked {when(r.checked_at)}
          </span>
        </p>
      )}
      <ul class="items" data-testid="health-checks">
        {r?.checks.map((c) => (
          <li key={c.id} data-check={c.id} data-status={c.status} style={{ padding: '0.6rem 0.8rem' }}>
            <div class="item-line">
              <strong>{c.title}</strong>
              <span class={`badge ${STATUS[c.status].badge}`}>{STATUS[c.status].label}</span>
            </div>
            <p class="small" style={{ margin: '0.3rem 0' }}>
              {c.detail}
            </p>
            {c.failing_records && c.failing_records.length > 0 && (
              <ul class="small">
                {c.failing_records.map((f) => (
                  <li key={`${f.type} ${f.name}`}>
                    <code>
                      {f.type} {f.name}
                    </code>
                    : {f.reason}
                  </li>
                ))}
              </ul>
            )}
            {c.fix && (
              <p class="small" data-testid="fix" style={{ margin: 0 }}>
                <strong>Fix:</strong> {c.fix}
              </p>
            )}
          </li>
        ))}
      </ul>
    </Page>
  );
}
