/** Per-user background service definitions: naming rule, systemd unit, launchd plist, Windows task. */
import t from 'tap';
import path from 'node:path';
import { createHash } from 'node:crypto';
import { defaultHome } from '../../src/keys/home.js';
import { serviceNames } from '../../src/service/names.js';
import { portFromServeArguments, splitCommandLine, type ServiceSpec } from '../../src/service/service-spec.js';
import { parseSystemctlShow, renderSystemdUnit, systemdExecWord, systemdUnitPort, systemdUserUnitDir } from '../../src/service/systemd.js';
import { isUnderProtectedHome, parseSystemdVersion, renderSystemEdgeUnit, renderSystemServiceUnit, type SystemEdgeSpec } from '../../src/service/systemd-system.js';
import { launchdPlistPort, parseLaunchctlPrint, renderLaunchdPlist } from '../../src/service/launchd.js';
import { decodeTaskXml, encodeTaskXml, parseTaskState, renderWindowsTaskXml, windowsTaskArguments, windowsTaskPort } from '../../src/service/windows-task.js';

const suffix = (home: string) => createHash('sha256').update(path.resolve(home)).digest('hex').slice(0, 16);
const SECRET_WORDS = /password|secret|token|api[_-]?key|wrapped_key|kek|SVC_API_KEY/i;

const unixSpec = (home = '/srv/mail home', port = 8123): ServiceSpec => ({
  nodePath: '/usr/local/bin/node',
  svcScript: '/opt/pkg/lib/node_modules/svc/bin/svc',
  home,
  port,
  logs: { stdout: `${home}/logs/service.log`, stderr: `${home}/logs/service.err.log` },
});

const winSpec: ServiceSpec = {
  nodePath: 'C:\\Program Files\\nodejs\\node.exe',
  svcScript: 'C:\\Users\\ann\\AppData\\Roaming\\npm\\node_modules\\svc\\bin\\svc',
  home: 'C:\\Users\\ann\\AppData\\Local\\svc',
  port: 8025,
  logs: { stdout: 'C:\\Users\\ann\\AppData\\Local\\svc\\logs\\service.log', stderr: 'C:\\Users\\ann\\AppData\\Local\\svc\\logs\\service.err.log' },
};

t.test('only the default production home gets the plain name; any other home gets the 16-hex suffix', async (t) => {
  const env = { XDG_DATA_HOME: '/data' } as NodeJS.ProcessEnv;
  const cases: { name: string; home: string; base: string }[] = [
    { name: 'default production home', home: defaultHome('production', env), base: 'svc' },
    { name: 'default production home, unnormalised', home: defaultHome('production', env) + path.sep + '.', base: 'svc' },
    { name: 'default development home', home: defaultHome('development', env), base: `svc-${suffix(defaultHome('development', env))}` },
    { name: 'a custom home', home: '/tmp/h1', base: `svc-${suffix('/tmp/h1')}` },
  ];
  for (const c of cases) {
    const names = serviceNames(c.home, env);
    t.equal(names.base, c.base, c.name);
    t.equal(names.systemdUnit, `${c.base}.service`, `${c.name}: systemd unit`);
    t.equal(names.launchdLabel, `local.${c.base}`, `${c.name}: launchd label`);
    t.equal(names.windowsTask, c.base, `${c.name}: Windows task`);
  }
  t.match(serviceNames('/tmp/h1', env).base, /^svc-[0-9a-f]{16}$/);
  t.not(serviceNames('/tmp/h1', env).base, serviceNames('/tmp/h2', env).base, 'two homes never share a name');
});

t.test('systemd unit: absolute ExecStart running serve for the home, port and production flavor', async (t) => {
  const unit = renderSystemdUnit(unixSpec('/home/ann/.local/share/svc', 8123));
  const lines = unit.split('\n');
  t.ok(lines.includes('ExecStart=/usr/local/bin/node /opt/pkg/lib/node_modules/svc/bin/svc serve --home /home/ann/.local/share/svc --port 8123 --flavor production'));
  t.ok(lines.includes('Restart=on-failure'));
  t.ok(lines.includes('Environment=MALLOC_ARENA_MAX=2') && lines.includes('Environment=MALLOC_MMAP_THRESHOLD_=131072'), 'the allocator settings large mail needs');
  t.ok(lines.includes('StandardOutput=append:/home/ann/.local/share/svc/logs/service.log'));
  t.ok(lines.includes('StandardError=append:/home/ann/.local/share/svc/logs/service.err.log'));
  t.ok(lines.includes('WantedBy=default.target'));
  t.ok(lines.includes('[Unit]') && lines.includes('[Service]') && lines.includes('[Install]'));
  t.notMatch(unit, SECRET_WORDS, 'no secrets in the unit');
  t.equal(systemdUnitPort(unit), 8123, 'the port reads back from the unit');
});

t.test('systemd unit: paths with spaces, %, $ and quotes stay literal', async (t) => {
  const cases: { value: string; word: string }[] = [
    { value: '/usr/bin/node', word: '/usr/bin/node' },
    { value: '/srv/mail home', word: '"/srv/mail home"' },
    { value: '/srv/100%', word: '"/srv/100%%"' },
    { value: '/srv/$HOME', word: '"/srv/$$HOME"' },
    { value: '/srv/a"b\\c', word: '"/srv/a\\"b\\\\c"' },
  ];
  for (const c of cases) t.equal(systemdExecWord(c.value), c.word, c.value);
  const unit = renderSystemdUnit(unixSpec('/srv/50% mail'));
  t.match(unit, /^ExecStart=\S+ \S+ serve --home "\/srv\/50%% mail" --port 8123 --flavor production$/m);
  t.match(unit, /^StandardOutput=append:\/srv\/50%% mail\/logs\/service\.log$/m);
  t.throws(() => renderSystemdUnit(unixSpec('/srv/a\nExecStartPre=/bin/evil')), 'a line break cannot inject a setting');
});

t.test('systemd unit directory follows XDG_CONFIG_HOME', async (t) => {
  t.equal(systemdUserUnitDir({ XDG_CONFIG_HOME: '/cfg' }), '/cfg/systemd/user');
  t.match(systemdUserUnitDir({}), /\.config\/systemd\/user$/);
  t.match(systemdUserUnitDir({ XDG_CONFIG_HOME: 'relative' }), /\.config\/systemd\/user$/, 'a relative XDG_CONFIG_HOME is ignored');
});

t.test('systemctl show maps to registered, running and state', async (t) => {
  const show = (load: string, active: string, file: string) => `LoadState=${load}\nActiveState=${active}\nSubState=x\nUnitFileState=${file}\n`;
  const cases = [
    { out: show('loaded', 'active', 'enabled'), installed: true, want: { registered: true, running: true, state: 'running' } },
    { out: show('loaded', 'activating', 'enabled'), installed: true, want: { registered: true, running: false, state: 'starting' } },
    { out: show('loaded', 'inactive', 'disabled'), installed: true, want: { registered: false, running: false, state: 'stopped' } },
    { out: show('loaded', 'failed', 'enabled'), installed: true, want: { registered: true, running: false, state: 'failed' } },
    { out: show('not-found', 'inactive', ''), installed: true, want: { registered: false, running: false, state: 'not_registered' } },
    { out: show('not-found', 'inactive', ''), installed: false, want: { registered: false, running: false, state: 'not_installed' } },
  ];
  for (const c of cases) t.same(parseSystemctlShow(c.out, c.installed), c.want, c.out.replace(/\n/g, ' '));
});

t.test('launchd plist: program arguments, RunAtLoad, KeepAlive and both logs', async (t) => {
  const plist = renderLaunchdPlist(unixSpec('/Users/ann/Library/Application Support/svc', 8025), 'local.svc');
  t.match(plist, /<key>Label<\/key><string>local\.svc<\/string>/);
  const args = [...plist.matchAll(/^ {4}<string>(.*)<\/string>$/gm)].map((m) => m[1]);
  t.same(args, ['/usr/local/bin/node', '/opt/pkg/lib/node_modules/svc/bin/svc', 'serve', '--home', '/Users/ann/Library/Application Support/svc', '--port', '8025', '--flavor', 'production']);
  t.match(plist, /<key>RunAtLoad<\/key><true\/>/);
  t.match(plist, /<key>KeepAlive<\/key>\s*<dict>\s*<key>SuccessfulExit<\/key><false\/>/);
  t.match(plist, /<key>StandardOutPath<\/key><string>\/Users\/ann\/Library\/Application Support\/svc\/logs\/service\.log<\/string>/);
  t.match(plist, /<key>StandardErrorPath<\/key><string>\/Users\/ann\/Library\/Application Support\/svc\/logs\/service\.err\.log<\/string>/);
  t.notMatch(plist, SECRET_WORDS);
  t.equal(launchdPlistPort(plist), 8025, 'the port reads back from the plist');
  t.match(renderLaunchdPlist(unixSpec('/srv/a<b&c'), 'local.svc'), /<string>\/srv\/a&lt;b&amp;c<\/string>/, 'XML special characters are escaped');
});

t.test('launchctl print maps to a state', async (t) => {
  t.same(parseLaunchctlPrint('local.svc = {\n\tstate = running\n\tpid = 42\n}'), { registered: true, running: true, state: 'running' });
  t.same(parseLaunchctlPrint('local.svc = {\n\tstate = not running\n}'), { registered: true, running: false, state: 'stopped' });
  t.same(parseLaunchctlPrint('local.svc = {\n\tstate = spawn scheduled\n}'), { registered: true, running: false, state: 'starting' });
});

t.test('Windows task: logon trigger for the user, cmd wrapper appending both logs', async (t) => {
  const xml = renderWindowsTaskXml(winSpec, { userId: 'PC\\ann', cmdPath: 'C:\\Windows\\System32\\cmd.exe' });
  t.match(xml, /<LogonTrigger>\s*<Enabled>true<\/Enabled>\s*<UserId>PC\\ann<\/UserId>/);
  t.match(xml, /<LogonType>InteractiveToken<\/LogonType>/, 'runs in the logon session: no stored password');
  t.match(xml, /<RunLevel>LeastPrivilege<\/RunLevel>/, 'no administrator rights');
  t.match(xml, /<ExecutionTimeLimit>PT0S<\/ExecutionTimeLimit>/);
  t.match(xml, /<Command>C:\\Windows\\System32\\cmd\.exe<\/Command>/);
  t.equal(
    windowsTaskArguments(winSpec),
    '/d /s /c ""C:\\Program Files\\nodejs\\node.exe" "C:\\Users\\ann\\AppData\\Roaming\\npm\\node_modules\\svc\\bin\\svc" serve --home "C:\\Users\\ann\\AppData\\Local\\svc" --port 8025 --flavor production 1>>"C:\\Users\\ann\\AppData\\Local\\svc\\logs\\service.log" 2>>"C:\\Users\\ann\\AppData\\Local\\svc\\logs\\service.err.log""',
  );
  t.match(xml, /<Arguments>\/d \/s \/c &quot;&quot;C:\\Program Files/, 'arguments are XML-escaped');
  t.notMatch(xml.replace(/InteractiveToken/g, ''), SECRET_WORDS, 'no secrets (the logon type name aside)');
  t.equal(windowsTaskPort(xml), 8025, 'the port reads back from the task');
  t.throws(() => windowsTaskArguments({ ...winSpec, home: 'C:\\%PATH%' }), 'cmd would expand %VAR%');
  const bytes = encodeTaskXml(xml);
  t.same([...bytes.subarray(0, 2)], [0xff, 0xfe], 'UTF-16 LE with a byte-order mark');
  t.equal(decodeTaskXml(bytes), xml);
});

t.test('Task Scheduler states map to registered, running and state', async (t) => {
  t.same(parseTaskState('Running\r\n', true), { registered: true, running: true, state: 'running' });
  t.same(parseTaskState('Ready', true), { registered: true, running: false, state: 'stopped' });
  t.same(parseTaskState('Disabled', true), { registered: false, running: false, state: 'stopped' });
  t.same(parseTaskState('NotRegistered', false), { registered: false, running: false, state: 'not_installed' });
  t.same(parseTaskState('???', true), { registered: null, running: null, state: 'unknown' });
});

t.test('the port reads back from the --port argument, not from a home path containing it', async (t) => {
  const tricky = unixSpec('/srv/x --port 1 "y" $z 5%', 9000);
  t.equal(systemdUnitPort(renderSystemdUnit(tricky)), 9000, 'systemd');
  t.equal(launchdPlistPort(renderLaunchdPlist(tricky, 'local.svc')), 9000, 'launchd');
  t.equal(windowsTaskPort(renderWindowsTaskXml({ ...winSpec, home: 'C:\\x --port 1 y', port: 9000 }, { userId: 'u', cmdPath: 'cmd.exe' })), 9000, 'Windows');
  t.same(splitCommandLine('a "b c" "d\\"e" f', true), ['a', 'b c', 'd"e', 'f']);
  t.equal(portFromServeArguments(['node', 'svc', 'serve', '--home', '--port', '--port', '80']), 80, 'flag/value pairs');
  t.equal(portFromServeArguments(['node', 'svc', 'serve', '--port', '70000']), null, 'out of range');
  t.equal(systemdUnitPort('ExecStart=/usr/bin/node svc serve'), null, 'no port');
});

const systemBase = { nodePath: '/usr/bin/node', svcScript: '/usr/lib/node_modules/svc/bin/svc', user: 'svc', systemdVersion: 252 };
const edgeSpec = (over: Partial<SystemEdgeSpec> = {}): SystemEdgeSpec => ({
  ...systemBase,
  dataDir: '/var/lib/svc-edge',
  hostname: 'mx.example.com',
  smtpHost: '0.0.0.0',
  smtpPort: 25,
  apiHost: '127.0.0.1',
  apiPort: 8790,
  acme: null,
  ...over,
});
const execWords = (unit: string) => splitCommandLine(/^ExecStart=(.*)$/m.exec(unit)![1], true);

t.test('system unit for the home: serve as the system user, the sealed key, no capabilities, writes only the home', async (t) => {
  const unit = renderSystemServiceUnit({ ...systemBase, home: '/var/lib/svc', port: 8733 });
  const lines = unit.split('\n');
  t.same(execWords(unit), ['/usr/bin/node', '/usr/lib/node_modules/svc/bin/svc', 'serve', '--home', '/var/lib/svc', '--port', '8733', '--flavor', 'production']);
  for (const line of ['User=svc', 'Group=svc', 'LoadCredentialEncrypted=svc-kek:/var/lib/svc/svc-kek.cred', 'ReadWritePaths=/var/lib/svc', 'CapabilityBoundingSet=', 'AmbientCapabilities=', 'WantedBy=multi-user.target', 'StartLimitIntervalSec=0']) {
    t.ok(lines.includes(line), line);
  }
  t.equal(lines.filter((l) => l.startsWith('ReadWritePaths=')).length, 1, 'one writable path');
  t.same(lines.filter((l) => l.startsWith('Environment=')), ['Environment=MALLOC_ARENA_MAX=2', 'Environment=MALLOC_MMAP_THRESHOLD_=131072'], 'only the allocator settings');
  t.notOk(lines.some((l) => l.startsWith('StandardOutput=')), 'a system service logs to the journal');
  t.notMatch(lines.filter((l) => !l.startsWith('LoadCredentialEncrypted=')).join('\n'), SECRET_WORDS, 'no secrets in the unit');
});

t.test('system units: restart with growing pauses where systemd supports it (254+), a fixed pause before', async (t) => {
  t.equal(parseSystemdVersion('systemd 252 (252.38-1~deb12u1)\n+PAM +AUDIT'), 252);
  t.equal(parseSystemdVersion('not systemd'), null);
  const old = renderSystemServiceUnit({ ...systemBase, home: '/var/lib/svc', port: 8733, systemdVersion: 252 }).split('\n');
  t.ok(old.includes('RestartSec=15'));
  t.notOk(old.some((l) => l.startsWith('RestartSteps=')), 'systemd 252 does not know RestartSteps=');
  const unknown = renderSystemServiceUnit({ ...systemBase, home: '/var/lib/svc', port: 8733, systemdVersion: null }).split('\n');
  t.notOk(unknown.some((l) => l.startsWith('RestartSteps=')), 'an unknown version gets only settings every systemd knows');
  const current = renderSystemEdgeUnit(edgeSpec({ systemdVersion: 256 })).split('\n');
  for (const line of ['Restart=on-failure', 'RestartSec=2', 'RestartSteps=8', 'RestartMaxDelaySec=300']) t.ok(current.includes(line), line);
});

t.test('system unit for the edge: public SMTP, loopback API, CAP_NET_BIND_SERVICE only, writes only its data', async (t) => {
  const unit = renderSystemEdgeUnit(edgeSpec({ acme: { email: 'ops@example.com' } }));
  const lines = unit.split('\n');
  t.same(execWords(unit).slice(2), ['edge', '--data', '/var/lib/svc-edge', '--host', '0.0.0.0', '--smtp-port', '25', '--api-host', '127.0.0.1', '--api-port', '8790', '--hostname', 'mx.example.com', '--acme', '--acme-email', 'ops@example.com']);
  for (const line of ['CapabilityBoundingSet=CAP_NET_BIND_SERVICE', 'AmbientCapabilities=CAP_NET_BIND_SERVICE', 'ReadWritePaths=/var/lib/svc-edge', 'ProtectSystem=strict', 'ProtectHome=yes', 'NoNewPrivileges=yes']) {
    t.ok(lines.includes(line), line);
  }
  t.notOk(lines.some((l) => l.startsWith('LoadCredential')), 'the edge gets no key of the home');
  t.notMatch(unit, SECRET_WORDS);
  t.notOk(execWords(renderSystemEdgeUnit(edgeSpec())).includes('--acme'), 'ACME only when asked');
});

t.test('system units: a path cannot inject a setting or break the credential line', async (t) => {
  t.throws(() => renderSystemServiceUnit({ ...systemBase, home: '/var/lib/svc\nExecStartPre=/bin/evil', port: 1 }));
  t.throws(() => renderSystemServiceUnit({ ...systemBase, home: '/var/lib/svc:x', port: 1 }), 'a colon would end the credential name/path pair early');
  t.throws(() => renderSystemServiceUnit({ ...systemBase, home: '/var/lib/mail home', port: 1 }));
  t.throws(() => renderSystemEdgeUnit(edgeSpec({ dataDir: '/var/lib/"edge' })));
  t.match(renderSystemEdgeUnit(edgeSpec({ dataDir: '/var/lib/50% edge' })), /^ReadWritePaths="\/var\/lib\/50%% edge"$/m);
  t.ok(isUnderProtectedHome('/home/ann/svc') && isUnderProtectedHome('/root') && isUnderProtectedHome('/run/user/1000/svc'));
  t.notOk(isUnderProtectedHome('/var/lib/svc') || isUnderProtectedHome('/homestead'));
});
