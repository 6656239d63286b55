/**
 * `svc open`: signs the owner into the web app in a browser with a single-use login link
 * (spec §4.13 `POST /owner/login-links`, valid two minutes). Opens it with `$BROWSER`, else the
 * platform's opener when there is one (and a display on Linux), else prints it.
 */
import { spawn } from 'node:child_process';
import type { Group } from './commands.js';
import { opt } from './commands.js';
import { out, printJson } from './output.js';

/**
 * The opener command: `$BROWSER` when set (the common convention; one program, run without a
 * shell, so the URL is never shell-parsed), else the platform's, or null when none is expected to work.
 */
function opener(url: string): [string, string[]] | null {
  const browser = process.env.BROWSER?.trim();
  if (browser) return [browser, [url]];
  if (process.platform === 'darwin') return ['open', [url]];
  if (process.platform === 'win32') return ['cmd', ['/c', 'start', '""', url.replace(/&/g, '^&')]];
  if (!process.env.DISPLAY && !process.env.WAYLAND_DISPLAY) return null;
  return ['xdg-open', [url]];
}

/** Starts the opener detached; resolves false when it cannot be started or fails at once. */
function launch(cmd: string, args: string[]): Promise<boolean> {
  return new Promise((resolve) => {
    const child = spawn(cmd, args, { stdio: 'ignore', detached: true });
    child.once('error', () => resolve(false));
    child.once('exit', (code) => resolve(code === 0));
    // xdg-open may keep running with the browser; having started is enough.
    setTimeout(() => resolve(true), 1500).unref();
    child.unref();
  });
}

export const group: Group = {
  name: 'open',
  summary: 'open the owner web app in a browser, signed in (or print the link)',
  actions: {
    '': {
      summary: 'Create a single-use login link (valid two minutes) and open it in the browser; without a browser, print it. Owner only.',
      options: [opt('print', 'Print the link instead of opening a browser.')],
      examples: ['svc open', 'svc open --print'],
      async run(ctx) {
        const client = await ctx.client();
        const link = await client.call<{ url: string; expires_at: string }>('POST', '/v0/owner/login-links', { body: {} });
        const how = ctx.bool('print') ? null : opener(link.url);
        const opened = how ? await launch(...how) : false;
        if (ctx.json) return printJson({ ...link, opened });
        if (opened) out(`Opened the web app in your browser (the link is single use and expires at ${link.expires_at}).`);
        else out(`Open this link in a browser to sign in (single use, expires at ${link.expires_at}):\n${link.url}`);
      },
    },
  },
};
