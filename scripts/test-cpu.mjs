// Where the suite's CPU goes: loaded into every test process with
//   CPU_LOG=/tmp/cpu.log NODE_OPTIONS=--import=./scripts/test-cpu.mjs npm test
// it appends one line per test file when it ends: CPU seconds of the file's own process, of the
// processes it started and waited for (services, CLI runs, Chromium, DNS servers), wall seconds,
// and the file. Sort by the sum to see what to make cheaper (docs/testing.md, "Suite time").
import fs from 'node:fs';

const file = process.argv[1]?.endsWith('.test.ts') ? process.argv[1] : undefined;
if (file && process.env.CPU_LOG) {
  const started = Date.now();
  process.on('exit', () => {
    try {
      // /proc/self/stat after the command's closing parenthesis: utime, stime, cutime, cstime are fields 14–17.
      const fields = fs.readFileSync('/proc/self/stat', 'utf8').split(') ')[1].split(' ');
      const [utime, stime, cutime, cstime] = fields.slice(11, 15).map(Number);
      const hz = 100;
      fs.appendFileSync(process.env.CPU_LOG, `${((utime + stime) / hz).toFixed(1)} ${((cutime + cstime) / hz).toFixed(1)} ${((Date.now() - started) / 1000).toFixed(1)} ${file}\n`);
    } catch {
      // Not Linux, or /proc unreadable: nothing to report.
    }
  });
}
