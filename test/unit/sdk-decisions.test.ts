/**
 * The SDK method decisions (issue 35 §1) stay one table: the client walked without a service has
 * exactly the methods test/helpers/sdk-decisions.ts decides, and docs/agentmail-compat.md
 * ("Every SDK method") says the same thing for each. And every permission name of the SDK's
 * `ApiKeyPermissions` is either one svc grants or one the docs say svc ignores, so a newer SDK's
 * permission is decided too (it is ignored meanwhile, never a 400).
 */
import t from 'tap';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { AgentMailClient } from 'agentmail';
import * as serialization from 'agentmail/serialization';
import { DOC_WORDING, SDK_DECISIONS, sdkMethods } from '../helpers/sdk-decisions.js';
import { PERMISSIONS, permissionSet } from '../../src/auth/permissions.js';
import { ApiError } from '../../src/core/errors.js';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const compat = fs.readFileSync(path.join(root, 'docs', 'agentmail-compat.md'), 'utf8');
const keysDoc = fs.readFileSync(path.join(root, 'docs', 'inboxes-and-keys.md'), 'utf8');

/** The rows of the doc's "Every SDK method" table: method → decision as written. */
function docTable(): Map<string, string> {
  const section = compat.slice(compat.indexOf('## Every SDK method'));
  const end = section.indexOf('\n## ', 1);
  const rows = new Map<string, string>();
  for (const line of (end > 0 ? section.slice(0, end) : section).split('\n')) {
    const row = /^\| `([\w.]+)` \| ([^|]+?) \|/.exec(line);
    if (row) rows.set(row[1], row[2]);
  }
  return rows;
}

t.test('the walked client has exactly the decided methods: 141 in agentmail 0.5.27', async (t) => {
  const methods = sdkMethods(new AgentMailClient({ apiKey: 'unused', baseUrl: 'http://127.0.0.1:9' }));
  t.equal(methods.length, 141);
  t.same(methods.filter((m) => !SDK_DECISIONS.has(m)), [], 'every SDK method is decided');
  t.same([...SDK_DECISIONS.keys()].filter((m) => !methods.includes(m)).sort(), [], 'no decision for a method the SDK lacks');
  t.equal(methods.filter((m) => m.startsWith('pods.')).length, 43, 'the 43 pod methods');
  t.ok(methods.every((m) => !m.startsWith('pods.') || SDK_DECISIONS.get(m) === 'works'), 'pods work (docs/pods.md)');
});

t.test("docs/agentmail-compat.md's table and the test's table agree, row by row", async (t) => {
  const rows = docTable();
  t.equal(rows.size, SDK_DECISIONS.size, 'one row per method');
  for (const [method, decision] of SDK_DECISIONS) t.equal(rows.get(method), DOC_WORDING[decision], method);
  t.same([...rows.keys()].filter((m) => !SDK_DECISIONS.has(m)), [], 'no row for an undecided method');
});

t.test("every permission of the SDK's ApiKeyPermissions is svc's or documented as ignored", async (t) => {
  const names = (serialization.ApiKeyPermissions as unknown as { _getRawProperties(): string[] })._getRawProperties();
  t.ok(names.length >= 38, 'the SDK names its permissions');
  const ignoredPatterns = ['domain_', 'api_key_', 'metrics_read', 'pod_', 'provider_'];
  for (const name of names.filter((n) => !(PERMISSIONS as readonly string[]).includes(n))) {
    const pattern = ignoredPatterns.find((p) => name.startsWith(p));
    t.ok(pattern, `${name}: an AgentMail permission the docs name`);
    if (pattern) t.ok(keysDoc.includes(`\`${pattern.endsWith('_') ? `${pattern}*` : pattern}\``), `${name}: docs/inboxes-and-keys.md says svc ignores it`);
  }
});

t.test('the object form grants only svc names set to true; everything else is ignored', async (t) => {
  const everything = Object.fromEntries(
    (serialization.ApiKeyPermissions as unknown as { _getRawProperties(): string[] })._getRawProperties().map((n) => [n, true]),
  );
  // svc's `message_reply` is not an AgentMail name, so the SDK's full object never grants it.
  t.same([...permissionSet(everything)].sort(), PERMISSIONS.filter((n) => n !== 'message_reply').sort(), 'the full AgentMail object, all true: exactly the svc names in it');
  t.same([...permissionSet({ domain_read: false, metrics_read: true, pod_create: true, provider_connect: true, api_key_create: true })], [], "AgentMail's own names grant nothing");
  t.same([...permissionSet({ a_permission_from_a_newer_sdk: true, inbox_read: true })], ['inbox_read'], 'an unknown name is ignored');
  const hostile = JSON.parse('{"__proto__": true, "constructor": true, "toString": true, "hasOwnProperty": true, "INBOX_READ": true, "inbox_read ": true}') as Record<string, boolean>;
  t.same([...permissionSet(hostile)], [], 'prototype names and near-misses grant nothing');
  t.same([...permissionSet({ inbox_read: null, message_read: false })], [], 'null and false grant nothing');
});

t.test('the array form stays strict: an unknown name is a validation_error naming it', async (t) => {
  for (const input of [['domain_read'], ['inbox_read', 'pod_read'], ['INBOX_READ'], ['__proto__']]) {
    let error: unknown;
    try {
      permissionSet(input);
    } catch (e) {
      error = e;
    }
    t.ok(error instanceof ApiError && error.code === 'validation_error' && error.message.includes(input[input.length - 1]), `${JSON.stringify(input)}: validation_error naming it`);
  }
  t.same([...permissionSet(['message_send', 'inbox_read'])].sort(), ['inbox_read', 'message_send']);
});
