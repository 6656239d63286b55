/**
 * `svc guard`: the outbound guard of the `guarded` send policy (issue 20 §4, docs/guarded.md,
 * `/owner/guard`): which checks hold a guarded key's sends for the owner, the first-contact
 * limits, and the owner's own secrets (shown only by their last 4 characters). A secret can come
 * from a file (or `-` for stdin) so it stays out of the shell history and the process list.
 */
import { CliError } from './exit-codes.js';
import { opt, type Ctx, type Group } from './commands.js';
import { fields, out, printJson } from './output.js';
import type { GuardSettingsView } from '../mail/guard.js';

function showGuard(ctx: Ctx, g: GuardSettingsView, lead?: string): void {
  if (ctx.json) return printJson(g);
  out(
    (lead ? `${lead}\n` : '') +
      fields([
        ...g.checks.map((c): [string, string] => [c.name, `${c.enabled ? 'on ' : 'off'}  ${c.description}`]),
        ['first contacts', `at most ${g.new_recipients.per_message} per message, ${g.new_recipients.per_day} per 24 hours`],
        ['your secrets', g.secrets.length ? g.secrets.map((x) => `${x.hint} (${x.secret_id})`).join(', ') : 'none'],
      ]),
  );
}

export const group: Group = {
  name: 'guard',
  summary: 'the outbound guard of the guarded send policy (owner)',
  notes: 'A key with --send-policy guarded sends at once unless a check below finds something; then the send waits for you as a draft, with the reasons (svc drafts list --state pending_approval).',
  actions: {
    show: {
      summary: 'Show the checks, the first-contact limits and your secrets (last 4 characters only).',
      examples: ['svc guard show', 'svc guard show --json'],
      async run(ctx) {
        const client = await ctx.client();
        showGuard(ctx, await client.call<GuardSettingsView>('GET', '/v0/owner/guard'));
      },
    },
    set: {
      summary: 'Turn checks on or off, change the limits, add or remove secrets; the rest is kept.',
      options: [
        opt('on CHECK...', 'Turn a check on (repeatable, or comma-separated).'),
        opt('off CHECK...', 'Turn a check off (repeatable, or comma-separated).'),
        opt('per-message N', 'First contacts allowed in one message.'),
        opt('per-day N', 'First contacts allowed within 24 hours.'),
        opt('add-secret-file FILE', 'Add the secret in FILE (- for stdin); 16-256 characters.'),
        opt('remove-secret ID...', 'Remove a secret by its id (repeatable).'),
      ],
      examples: ['svc guard set --off new_recipients', 'svc guard set --per-message 20 --per-day 100', 'printf %s "$BANK_PASSWORD" | svc guard set --add-secret-file -'],
      async run(ctx) {
        const body: Record<string, unknown> = {};
        const checks: Record<string, boolean> = {};
        for (const name of ctx.list('on', true)) checks[name] = true;
        for (const name of ctx.list('off', true)) {
          if (checks[name]) throw new CliError('validation_error', `--on and --off both name ${name}.`);
          checks[name] = false;
        }
        if (Object.keys(checks).length) body.checks = checks;
        const perMessage = ctx.int('per-message', 0, 100_000);
        const perDay = ctx.int('per-day', 0, 100_000);
        if (perMessage !== undefined || perDay !== undefined) body.new_recipients = { per_message: perMessage, per_day: perDay };
        const secret = ctx.file('add-secret-file')?.toString('utf8').replace(/\r?\n$/, '');
        if (secret !== undefined) body.add_secrets = [secret];
        const removed = ctx.list('remove-secret', true);
        if (removed.length) body.remove_secrets = removed;
        if (Object.keys(body).length === 0) throw new CliError('validation_error', 'Nothing to set.', 'Run `svc guard set --help`.');
        const client = await ctx.client();
        showGuard(ctx, await client.call<GuardSettingsView>('PATCH', '/v0/owner/guard', { body }), 'Guard updated.');
      },
    },
  },
};
