/**
 * The edge checks a certificate from the CA before it stores or serves it (src/edge/acme.ts
 * usable; docs/acme.md): the leaf must be for the key, name every name, be valid now, and the
 * chain must be in order. A certificate that does not fit would otherwise break STARTTLS for
 * every new session (review of c2fe3dd). Certificates are made with openssl.
 */
import t from 'tap';
import fs from 'node:fs';
import path from 'node:path';
import { execFileSync } from 'node:child_process';
import { usable, AcmeFailed } from '../../src/edge/acme.js';
import { tempDir } from '../helpers/svc.js';

const dir = tempDir('svc-acme-usable-');
const run = (args: string[]) => execFileSync('openssl', args, { cwd: dir, stdio: 'ignore' });
const read = (name: string) => fs.readFileSync(path.join(dir, name));

// A CA, a leaf for mx.example.test issued by it, and an unrelated key.
run(['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes', '-keyout', 'ca.key', '-out', 'ca.pem', '-days', '2', '-subj', '/CN=Test CA']);
run(['req', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes', '-keyout', 'leaf.key', '-out', 'leaf.csr', '-subj', '/CN=mx.example.test']);
fs.writeFileSync(path.join(dir, 'san.ext'), 'subjectAltName=DNS:mx.example.test\n');
run(['x509', '-req', '-in', 'leaf.csr', '-CA', 'ca.pem', '-CAkey', 'ca.key', '-CAcreateserial', '-out', 'leaf.pem', '-days', '1', '-extfile', 'san.ext']);
run(['genpkey', '-algorithm', 'EC', '-pkeyopt', 'ec_paramgen_curve:P-256', '-out', 'other.key']);
const chain = Buffer.concat([read('leaf.pem'), read('ca.pem')]);

t.test('a fitting key and chain is usable until the leaf ends', async (t) => {
  const { notBefore, notAfter } = usable(read('leaf.key'), chain, ['mx.example.test']);
  t.ok(notAfter.getTime() > Date.now(), `valid until ${notAfter.toISOString()}`);
  t.ok(notBefore.getTime() <= Date.now() && notBefore < notAfter, `valid from ${notBefore.toISOString()}`);
});

t.test('what does not fit is refused, saying why', async (t) => {
  const refused = (key: Buffer, certs: Buffer, names: string[], now?: number) => {
    try {
      usable(key, certs, names, now);
      return 'accepted';
    } catch (err) {
      return err instanceof AcmeFailed ? err.message : `other: ${(err as Error).message}`;
    }
  };
  t.equal(refused(read('other.key'), chain, ['mx.example.test']), 'the certificate is not for this key');
  t.equal(refused(read('leaf.key'), chain, ['mx.example.test', 'mta-sts.example.test']), 'the certificate does not name mta-sts.example.test');
  t.equal(refused(read('leaf.key'), chain, ['mx.example.test'], Date.now() + 5 * 24 * 3600 * 1000), 'the certificate is not valid now');
  t.equal(refused(read('leaf.key'), Buffer.concat([read('ca.pem'), read('leaf.pem')]), ['ca.example']), 'the certificate is not for this key', 'the CA first is not the leaf');
  t.equal(refused(read('leaf.key'), Buffer.concat([read('leaf.pem'), read('leaf.pem')]), ['mx.example.test']), 'the certificate chain is out of order');
  t.equal(refused(read('leaf.key'), Buffer.from('not a certificate'), ['mx.example.test']), 'the CA sent no certificate');
  t.equal(refused(read('leaf.key'), Buffer.from('-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n'), ['mx.example.test']), 'the CA sent a certificate that does not parse');
});
