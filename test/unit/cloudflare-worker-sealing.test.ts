/**
 * Byte compatibility of the Cloudflare Worker's sealing with src/edge/sealed.ts: the Worker
 * (src/edge/cloudflare/worker.ts, transpiled as is) runs in workerd through miniflare's API, seals
 * messages handed to its email(), and the home's real opener (`openSealed`, `openObject`) and jose
 * (the reference) open them to the exact bytes — v1 below 256 KiB, v2 above, 8-bit content too.
 */
import t from 'tap';
import fs from 'node:fs';
import path from 'node:path';
import ts from 'typescript';
import { compactDecrypt, importJWK } from 'jose';
import { Miniflare, Log, LogLevel } from 'miniflare';
import { generateHomeKeyPair, openObject, openSealed, publicKeyId, SEALED_V2_MAGIC, rawMessage } from '../../src/edge/sealed.js';
import { repoRoot, tempDir } from '../helpers/svc.js';

const TOKEN = 'edge_' + 'a'.repeat(43);
const source = fs.readFileSync(path.join(repoRoot, 'src', 'edge', 'cloudflare', 'worker.ts'), 'utf8');
const script = ts.transpileModule(source, { compilerOptions: { target: ts.ScriptTarget.ES2022, module: ts.ModuleKind.ES2022 } }).outputText;

const quiet = new Log(LogLevel.NONE);
const mf = new Miniflare({
  modules: true,
  script,
  compatibilityDate: '2026-04-01',
  r2Buckets: ['BUFFER'],
  defaultPersistRoot: tempDir('svc-cf-seal-'),
  bindings: { EDGE_TOKEN: TOKEN, MAX_MESSAGE_BYTES: String(1024 * 1024) },
  host: '127.0.0.1',
  port: 0,
  unsafeTriggerHandlers: true,
  cf: false,
  log: quiet,
});
t.teardown(() => mf.dispose());

const auth = { authorization: `Bearer ${TOKEN}` };

t.test('what the Worker seals, the home opens to the same bytes (v1 and v2); jose agrees', async (t) => {
  const url = (await mf.ready).origin;
  const home = await generateHomeKeyPair();
  const put = await fetch(`${url}/routing`, { method: 'PUT', headers: { ...auth, 'content-type': 'application/json' }, body: JSON.stringify({ recipient_public_key: home.publicJwk, domains: ['home.test'], addresses: ['Bob@Home.test'] }) });
  const routing = (await put.json()) as { key_id: string; addresses: string[] };
  t.equal(put.status, 200);
  t.equal(routing.key_id, await publicKeyId(home.publicJwk), 'the same RFC 7638 thumbprint as the edge computes');
  t.same(routing.addresses, ['bob@home.test'], 'stored lower-cased, as the edge does');

  const head = (id: string, extra = '') => `From: alice@sender.test\r\nTo: bob@home.test\r\nSubject: s ${id}\r\nMessage-ID: <${id}@sender.test>\r\nContent-Type: text/plain; charset=iso-8859-1\r\nContent-Transfer-Encoding: 8bit\r\n${extra}\r\n`;
  // 8-bit bytes that are not UTF-8, and sizes on both sides of the v1/v2 boundary and of base64 groups.
  const latin = Buffer.from([0xe9, 0xe8, 0xff, 0x00, 0x80, 0x0d, 0x0a]);
  const messages = [
    Buffer.concat([Buffer.from(head('small')), latin, Buffer.from('\r\n')]),
    Buffer.concat([Buffer.from(head('mid')), Buffer.alloc(200_001, 0x61), Buffer.from('\r\n')]),
    Buffer.concat([Buffer.from(head('large')), Buffer.alloc(300_000, 0xe9), latin, Buffer.from('\r\n')]),
  ];
  for (const raw of messages) {
    const r = await fetch(`${url}/cdn-cgi/handler/email?from=alice@sender.test&to=BOB@home.test`, { method: 'POST', body: raw });
    t.equal(r.status, 200, await r.text());
  }
  const list = (await (await fetch(`${url}/objects`, { headers: auth })).json()) as { objects: { key: string; size: number }[] };
  t.equal(list.objects.length, 3);
  const keys = list.objects.map((o) => o.key);
  const batch = (await (await fetch(`${url}/objects/fetch`, { method: 'POST', headers: { ...auth, 'content-type': 'application/json' }, body: JSON.stringify({ keys }) })).json()) as { objects: { key: string; jwe: string }[]; separate: string[]; missing: string[] };
  t.same(batch.separate, [keys[2]], 'the message over 256 KiB is v2, fetched on its own');
  t.same(batch.missing, []);
  for (const [i, key] of keys.entries()) {
    const res = await fetch(`${url}/objects/${key}`, { headers: auth });
    const bytes = new Uint8Array(await res.arrayBuffer());
    t.equal(Number(res.headers.get('content-length')), bytes.length);
    t.equal(list.objects[i].size, bytes.length, 'the listed size is the stored size');
    const opened = await openSealed(bytes, home.privateJwk);
    t.ok(opened.raw.equals(messages[i]), `message ${i}: the exact bytes`);
    t.match(opened.meta.envelope, { mail_from: 'alice@sender.test', rcpt_to: ['bob@home.test'], client_ip: '', helo: '', via: 'cloudflare-email-routing' });
    t.equal(opened.meta.auth.dkim.result, 'temperror', 'nothing checked at this edge');
    if (i < 2) {
      t.equal(res.headers.get('content-type'), 'application/jose');
      const jwe = Buffer.from(bytes).toString('latin1');
      t.equal(batch.objects.find((o) => o.key === key)?.jwe, jwe, 'the batch answer carries the stored JWE');
      t.ok(rawMessage(await openObject(jwe, home.privateJwk)).equals(messages[i]), 'openObject (the reference path) too');
      const { plaintext, protectedHeader } = await compactDecrypt(jwe, await importJWK(home.privateJwk, 'ECDH-ES+A256KW'));
      t.match(protectedHeader, { alg: 'ECDH-ES+A256KW', enc: 'A256GCM', cty: 'svc-inbound+json', kid: routing.key_id });
      t.ok(Buffer.from((JSON.parse(new TextDecoder().decode(plaintext)) as { raw: string }).raw, 'base64').equals(messages[i]), 'jose opens it');
    } else {
      t.equal(res.headers.get('content-type'), 'application/octet-stream');
      t.ok(Buffer.from(bytes.subarray(0, SEALED_V2_MAGIC.length)).equals(SEALED_V2_MAGIC), 'v2 magic');
    }
  }
  // Another home key does not open them.
  const other = await generateHomeKeyPair();
  const first = new Uint8Array(await (await fetch(`${url}/objects/${keys[0]}`, { headers: auth })).arrayBuffer());
  await t.rejects(openSealed(first, other.privateJwk), { reason: 'decrypt_failed' });
  const deleted = (await (await fetch(`${url}/objects/delete`, { method: 'POST', headers: { ...auth, 'content-type': 'application/json' }, body: JSON.stringify({ keys: [...keys, '01a22443-9383-7000-8727-e63f45ae89e7'] }) })).json()) as { deleted: string[]; absent: string[] };
  t.same(deleted, { deleted: keys, absent: ['01a22443-9383-7000-8727-e63f45ae89e7'] });
  t.same(((await (await fetch(`${url}/queue`, { headers: auth })).json()) as { entries: unknown[] }).entries, [], 'queue entries go with their objects');
});
