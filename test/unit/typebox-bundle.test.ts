/**
 * The built service loads typebox from one bundle (scripts/bundle-typebox.mjs): no emitted file
 * imports the package's ~700 modules any more, and the bundle offers what the package offers and
 * behaves the same on a real schema. Runs on dist/, which `npm test` builds first.
 */
import t from 'tap';
import fs from 'node:fs';
import path from 'node:path';
import * as Package from 'typebox';
import * as PackageValue from 'typebox/value';
import * as PackageCompile from 'typebox/compile';
import { repoRoot } from '../helpers/svc.js';

const dist = path.join(repoRoot, 'dist');
const vendor = path.join(dist, 'vendor');

function jsFiles(dir: string): string[] {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const file = path.join(dir, e.name);
    if (e.isDirectory()) return file === vendor ? [] : jsFiles(file);
    return e.name.endsWith('.js') ? [file] : [];
  });
}

t.test('no emitted file imports the typebox package itself', async (t) => {
  const offenders = jsFiles(dist).filter((f) => /\b(?:from|import)\s*\(?\s*'typebox(?:\/[a-z]+)?'/.test(fs.readFileSync(f, 'utf8')));
  t.same(offenders.map((f) => path.relative(repoRoot, f)), []);
  const users = jsFiles(dist).filter((f) => fs.readFileSync(f, 'utf8').includes('/vendor/typebox'));
  t.ok(users.length > 20, `${users.length} emitted files load the bundle`);
});

t.test('the bundle exports what the package exports and validates the same', async (t) => {
  const bundled = (await import(path.join(vendor, 'typebox.mjs'))) as typeof Package;
  const bundledValue = (await import(path.join(vendor, 'typebox-value.mjs'))) as typeof PackageValue;
  const bundledCompile = (await import(path.join(vendor, 'typebox-compile.mjs'))) as typeof PackageCompile;
  t.same(Object.keys(bundled).sort(), Object.keys(Package).sort(), 'typebox');
  t.same(Object.keys(bundledValue).sort(), Object.keys(PackageValue).sort(), 'typebox/value');
  t.same(Object.keys(bundledCompile).sort(), Object.keys(PackageCompile).sort(), 'typebox/compile');

  const schema = bundled.Type.Object({ to: bundled.Type.Array(bundled.Type.String({ maxLength: 5 }), { maxItems: 2 }), n: bundled.Type.Optional(bundled.Type.Integer()) }, { additionalProperties: false });
  const cases = [{ to: ['a'] }, { to: ['toolong'] }, { to: ['a', 'b', 'c'] }, { to: [], n: 1.5 }, { to: [], extra: 1 }, { to: ['x'], n: 3 }];
  const checker = bundledCompile.Compile(schema);
  t.same(
    cases.map((c) => checker.Check(c)),
    cases.map((c) => PackageValue.Value.Check(schema, c)),
    'a compiled check of the bundle agrees with the package',
  );
  t.same(
    cases.map((c) => bundledValue.Value.Check(schema, c)),
    [true, false, false, false, false, true],
  );
});
