/**
 * The README's "Using the CLI" walkthrough (issue 17 §3), run command by command exactly as
 * printed, through bash, from the repository root. The commands are read from README.md itself,
 * so the test breaks when the README changes. Substitutions, and only these: the service is
 * started by the test (instead of `npm start`) with HOME pointing at a temporary directory, so
 * the README's development home `~/.local/share/svc-dev` is the test's; `<MESSAGE-ID>`,
 * `<DRAFT_ID>` and `svc_key_...` become the values the previous commands printed; `svc open`
 * runs with a BROWSER that records the URL it is given.
 */
import fs from 'node:fs';
import path from 'node:path';
import { spawn } from 'node:child_process';
import t from 'tap';
import { repoRoot, startSvc, tempDir, type RunningSvc } from '../helpers/svc.js';

interface Step {
  line: string;
  /** The exit status the README's comment promises (`# exit 1: ...`), else 0. */
  exit: number;
}

/** The commands of the README's "Using the CLI" section: its `sh` blocks, one step per line. */
function walkthrough(): Step[] {
  const readme = fs.readFileSync(path.join(repoRoot, 'README.md'), 'utf8');
  const section = readme.split(/^## /m).find((s) => s.startsWith('Using the CLI'));
  if (!section) throw new Error('README.md has no "Using the CLI" section');
  const blocks = [...section.matchAll(/```sh\n([\s\S]*?)```/g)].map((m) => m[1]);
  return blocks.flatMap((block) =>
    block
      .split('\n')
      .filter((line) => line.trim() !== '')
      .map((line) => ({ line: line.trimEnd(), exit: Number(/#\s*exit (\d+)/.exec(line)?.[1] ?? 0) })),
  );
}

interface ShellRun {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Bounds one command; the walkthrough's commands answer in well under this. */
const COMMAND_TIMEOUT_MS = 60_000;

function bash(script: string, env: NodeJS.ProcessEnv): Promise<ShellRun> {
  return new Promise((resolve, reject) => {
    const child = spawn('bash', ['-c', script], { cwd: repoRoot, env, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => (stdout += d));
    child.stderr.on('data', (d) => (stderr += d));
    const timer = setTimeout(() => child.kill('SIGKILL'), COMMAND_TIMEOUT_MS);
    child.on('error', reject);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

let svc: RunningSvc;
let home: string;
let browserLog: string;
t.before(async () => {
  home = tempDir('svc-walkthrough-');
  svc = await startSvc({ home: path.join(home, '.local', 'share', 'svc-dev'), args: ['--local-edge'], env: { HOME: home } });
  browserLog = path.join(home, 'browser.log');
  const browser = path.join(home, 'record-url');
  fs.writeFileSync(browser, `#!/bin/sh\nprintf '%s\\n' "$1" >> '${browserLog}'\n`, { mode: 0o755 });
  process.env.WALKTHROUGH_BROWSER = browser;
});
t.teardown(() => svc.stop());

/** Polls bounded times for mail through the edge: "it arrives within seconds". */
const ARRIVAL_ATTEMPTS = 100;
const ARRIVAL_PAUSE_MS = 200;

t.test("README 'Using the CLI' runs as printed", async (t) => {
  const steps = walkthrough();
  t.ok(steps.length >= 10, `the walkthrough has its commands (${steps.length})`);
  const env: NodeJS.ProcessEnv = { ...process.env, HOME: home, BROWSER: process.env.WALKTHROUGH_BROWSER };
  for (const name of ['SVC_URL', 'SVC_API_KEY', 'SVC_HOME', 'XDG_DATA_HOME']) delete env[name];

  // Lines that set up the shell (alias, export) are replayed before every later command.
  const prelude: string[] = ['shopt -s expand_aliases'];
  const values: Record<string, string> = {};
  const substitute = (line: string) => {
    let out = line;
    for (const [placeholder, value] of Object.entries(values)) out = out.split(placeholder).join(value);
    return out;
  };

  for (const step of steps) {
    const line = substitute(step.line);
    if (/^(alias|export) /.test(line)) {
      prelude.push(line);
      const check = await bash([...prelude, 'true'].join('\n'), env);
      t.equal(check.code, 0, `${step.line}: sets up the shell`);
      continue;
    }
    let run = await bash([...prelude, line].join('\n'), env);
    if (/^svc messages list/.test(step.line)) {
      for (let attempt = 0; attempt < ARRIVAL_ATTEMPTS && !/^<\S+>/m.test(run.stdout); attempt++) {
        await new Promise((r) => setTimeout(r, ARRIVAL_PAUSE_MS));
        run = await bash([...prelude, line].join('\n'), env);
      }
    }
    t.equal(run.code, step.exit, `${step.line}: exit ${step.exit}${run.code === step.exit ? '' : `\n${run.stdout}\n${run.stderr}`}`);

    if (/^svc send --inbox/.test(step.line)) {
      // The hint the send prints is itself a command that works as printed.
      const hint = /`(svc messages show [^`]+)`/.exec(run.stdout)?.[1];
      t.ok(hint, 'svc send prints a follow-up command');
      const shown = await bash([...prelude, hint!].join('\n'), env);
      t.equal(shown.code, 0, `the printed hint works: ${hint}\n${shown.stderr}`);
    }
    if (/^svc messages list/.test(step.line)) {
      // The id column is the whole id: copied from the table it finds the message.
      const id = /^(<\S+>)/m.exec(run.stdout)?.[1];
      t.ok(id && !id.includes('…'), `the table shows a whole message id (${id})`);
      values['<MESSAGE-ID>'] = id!;
    }
    if (/^svc messages show/.test(step.line)) t.match(run.stdout, /First message/, 'the message body is shown');
    if (/^svc api-keys create/.test(step.line)) {
      // The longest match: the output also shows the key's short display prefix.
      const key = (run.stdout.match(/svc_key_[A-Za-z0-9_-]+/g) ?? []).sort((a, b) => b.length - a.length)[0];
      t.ok(key, 'the key is printed once');
      values['svc_key_...'] = key!;
    }
    if (step.exit === 1 && /^svc send/.test(step.line)) {
      t.match(run.stderr, /approval_required/, 'the agent\'s send becomes a draft awaiting approval');
      const draft = /[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/.exec(run.stderr)?.[0];
      t.ok(draft, 'the error names the draft id');
      values['<DRAFT_ID>'] = draft!;
    }
    if (/^svc threads list/.test(step.line)) t.match(run.stdout, /Hello Bob/, 'the conversation is listed');
    if (/^svc open/.test(step.line)) {
      const opened = fs.readFileSync(browserLog, 'utf8').trim().split('\n');
      t.equal(opened.length, 1, 'the browser was asked to open one URL');
      t.ok(opened[0].startsWith(svc.url), `a login link on the service (${opened[0]})`);
    }
  }

  for (const placeholder of ['<MESSAGE-ID>', '<DRAFT_ID>', 'svc_key_...']) t.ok(values[placeholder], `${placeholder} was filled from an earlier command`);
  const sent = await bash([...prelude.slice(0, 2), "svc threads list --json"].join('\n'), env);
  const threads = JSON.parse(sent.stdout) as { threads: { subject: string | null }[] };
  t.ok(threads.threads.some((th) => th.subject === 'Draft for approval'), 'the approved draft was sent');
});
