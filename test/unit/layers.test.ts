/**
 * The layering rules of docs/architecture.md, checked on the source: no import cycles among the
 * modules of src/ and workers/ (type-only imports included; lazy `import()` excepted), nothing below the request layer
 * imports HTTP, routes or MCP, and transactions are opened only where "Where transactions are
 * opened" says: src/requests/, src/db/, workers/loops/ and the named exceptions below.
 */
import t from 'tap';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { LOOP_NAMES, LOOP_THREADS } from '../../src/supervisor/loop-table.js';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');

function sourceFiles(): string[] {
  const out: string[] = [];
  const walk = (dir: string) => {
    for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
      const p = path.join(dir, entry.name);
      if (entry.isDirectory()) walk(p);
      else if (p.endsWith('.ts') && !p.endsWith('.d.ts')) out.push(p);
    }
  };
  for (const dir of ['src', 'workers']) walk(path.join(root, dir));
  return out;
}

/** Static relative imports and re-exports of a file, resolved to .ts files. Lazy `import(...)` is a deliberate break (issue 18) and not followed. */
function importsOf(file: string): string[] {
  const text = fs.readFileSync(file, 'utf8');
  const deps = new Set<string>();
  for (const m of text.matchAll(/(?:^|\n)\s*(?:import|export)\s(?:[^'";]*?from\s*)?'(\.[^']+)'/g)) {
    const spec = m[1];
    const target = path.resolve(path.dirname(file), spec.replace(/\.js$/, '.ts'));
    if (fs.existsSync(target)) deps.add(target);
  }
  return [...deps];
}

const files = sourceFiles();
const graph = new Map(files.map((f) => [f, importsOf(f)]));
const rel = (f: string) => path.relative(root, f);

t.test('no import cycles among src/ and workers/ modules', async (t) => {
  // Tarjan's strongly connected components; any component of two or more files is a cycle.
  let next = 0;
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const cycles: string[][] = [];
  const visit = (v: string) => {
    index.set(v, next);
    low.set(v, next++);
    stack.push(v);
    onStack.add(v);
    for (const w of graph.get(v) ?? []) {
      if (!index.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v)!, index.get(w)!));
    }
    if (low.get(v) === index.get(v)) {
      const component: string[] = [];
      let w: string;
      do {
        w = stack.pop()!;
        onStack.delete(w);
        component.push(rel(w));
      } while (w !== v);
      if (component.length > 1) cycles.push(component.sort());
    }
  };
  for (const v of graph.keys()) if (!index.has(v)) visit(v);
  t.same(cycles, [], 'import cycles');
});

t.test('the domain, repositories, auth and kernel never import HTTP, routes or MCP', async (t) => {
  const upper = ['src/http/', 'src/routes/', 'src/mcp/'];
  const lower = (f: string) => !upper.some((u) => f.startsWith(u)) && !f.startsWith('src/supervisor/') && !f.startsWith('src/cli/');
  const upward: string[] = [];
  for (const [file, deps] of graph) {
    if (!lower(rel(file)) || rel(file) === 'src/auth/gate.ts') continue;
    for (const dep of deps) if (upper.some((u) => rel(dep).startsWith(u))) upward.push(`${rel(file)} → ${rel(dep)}`);
  }
  t.same(upward, [], 'upward imports');
});

/** Where a transaction may be opened outside src/requests/, src/db/ and workers/loops/: a file, and the functions in it (all of it when omitted), each with why. */
const TRANSACTION_EXCEPTIONS: { file: string; functions?: string[]; why: string }[] = [
  { file: 'src/inbound/ingest.ts', functions: ['ingestObject', 'commitOpened'], why: 'the inbound page commit is the inbound throughput (docs/inbound.md)' },
  { file: 'src/mail/store.ts', functions: ['commitInbound'], why: 'the per-message commit inside the page; its own transaction when called alone' },
  { file: 'src/mail/send-flow.ts', functions: ['performSend', 'sendPrepared'], why: 'shared by the request layer and the scheduled-drafts loop; opens its transaction after composing in the pool (sendPrepared is performSend past the guard)' },
  { file: 'src/inbound/quarantine.ts', functions: ['quarantine'], why: "the inbound pipeline's failure record, called by ingest.ts and the reconcile loop outside any other transaction" },
  { file: 'src/inbound/quarantine-actions.ts', functions: ['retryDueQuarantine'], why: "the inbound-pull loop's auto-retry: a loop path, its own top level" },
  { file: 'src/mail/edge-health.ts', functions: ['recordEdgeSuccess', 'recordEdgeFailure'], why: "each edge's health, written by the inbound-pull loop and the outbox relay after talking to it: bookkeeping of a loop path, its own top level" },
  { file: 'src/outbound/edge-handovers.ts', functions: ['recordHandover', 'forgetHandover'], why: 'which edges an outbound job may have reached, written by the relay around its request (docs/outbound.md): must be durable before the request, outside the outbox rows\' transactions' },
  { file: 'src/mail/attachment-text.ts', functions: ['keepAttachmentText'], why: "an attachment's text read on first access (docs/attachments.md): called only from the request layer's attachmentReading, after the pool read the file outside any transaction" },
  { file: 'src/remote/remote-access.ts', functions: ['start'], why: "clears an earlier run's records when the service starts: a background top level, like a loop" },
];

/** The name of the function (or method) a line of `text` is in: the nearest declaration above it. */
function enclosingFunction(text: string, offset: number): string | null {
  const before = text.slice(0, offset).split('\n').reverse();
  for (const line of before) {
    const m = /^\s*(?:export\s+)?(?:async\s+)?function\s+(\w+)/.exec(line) ?? /^\s+(?:private\s+|public\s+)?(?:async\s+)?(?!(?:if|for|while|switch|catch)\b)(\w+)\s*\([^)]*\)[^=]*\{\s*$/.exec(line);
    if (m) return m[1];
  }
  return null;
}

t.test('transactions are opened only in src/requests/, src/db/, workers/loops/ and the named exceptions', async (t) => {
  const top = ['src/requests/', 'src/db/', 'workers/loops/'];
  const stray: string[] = [];
  for (const file of files) {
    const name = rel(file);
    if (top.some((dir) => name.startsWith(dir))) continue;
    const text = fs.readFileSync(file, 'utf8');
    for (const m of text.matchAll(/\.transaction\(/g)) {
      const fn = enclosingFunction(text, m.index);
      const allowed = TRANSACTION_EXCEPTIONS.some((e) => e.file === name && (e.functions === undefined || (fn !== null && e.functions.includes(fn))));
      if (!allowed) stray.push(`${name} ${fn ?? '(top level)'}`);
    }
  }
  t.same(stray, [], 'transactions opened outside their layer');
});

/** Packages a file loads when it runs: static imports that are not `import type` (those are erased). */
function runtimeImportsOf(file: string): { files: string[]; packages: string[] } {
  const text = fs.readFileSync(file, 'utf8');
  const files = new Set<string>();
  const packages = new Set<string>();
  for (const m of text.matchAll(/(?:^|\n)\s*(import|export)\s+(type\s)?(?:[^'";]*?from\s*)?'([^']+)'/g)) {
    if (m[2] !== undefined) continue;
    const spec = m[3];
    if (!spec.startsWith('.')) packages.add(spec);
    else {
      const target = path.resolve(path.dirname(file), spec.replace(/\.js$/, '.ts'));
      if (fs.existsSync(target)) files.add(target);
    }
  }
  return { files: [...files], packages: [...packages] };
}

/**
 * Each loop thread pays for every module it loads (issue 19: "each worker loads only what its loop
 * needs"); typebox alone costs a thread about 3.4 MiB of heap and jose a few more. No loop
 * validates a request, so the schemas of the modules they call live in separate *-schemas files;
 * the sealing code (jose, and typebox for the sealed object's shape) is imported on first use by
 * the inbound loop and when the home's key pair is made.
 */
t.test('no loop loads typebox or jose statically', async (t) => {
  for (const loop of ['delivery-events', 'inbound-reconcile', 'webhooks', 'remote-access', 'outbox', 'scheduled-drafts', 'inbound-pull', 'provisioning']) {
    const seen = new Set<string>();
    const chains: string[] = [];
    const walk = (file: string, chain: string[]) => {
      if (seen.has(file)) return;
      seen.add(file);
      const { files: deps, packages } = runtimeImportsOf(file);
      if (packages.some((p) => p === 'typebox' || p.startsWith('typebox/') || p === 'jose')) chains.push([...chain, rel(file)].join(' → '));
      for (const dep of deps) walk(dep, [...chain, rel(file)]);
    };
    walk(path.join(root, 'workers', 'loops', `${loop}.ts`), []);
    t.same(chains, [], `${loop} loads typebox or jose through`);
  }
});

t.test('every loop runs in exactly one loop thread', async (t) => {
  const placed = Object.values(LOOP_THREADS).flatMap((thread) => thread.loops);
  t.same([...placed].sort(), [...LOOP_NAMES].sort());
});
