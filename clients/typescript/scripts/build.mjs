// Compiles src/ to dist/cjs (CommonJS) and dist/esm (ES modules), each with its .d.ts, so that a
// `require` and an `import` of this package each load the SDK's matching build (one ToolError
// class, not two). dist/ is committed: `npm install ./clients/typescript` needs no compiler.
// `--check` compiles into a temporary folder and fails when dist/ differs from it.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createRequire } from 'node:module';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const check = process.argv.includes('--check');
const out = check ? mkdtempSync(join(tmpdir(), 'bo-ts-dist-')) : join(root, 'dist');
const tsc = createRequire(join(root, 'package.json')).resolve('typescript/bin/tsc');

if (!check) rmSync(out, { recursive: true, force: true });
for (const [config, dir, type] of [
  ['tsconfig.json', 'cjs', 'commonjs'],
  ['tsconfig.esm.json', 'esm', 'module'],
]) {
  execFileSync(process.execPath, [tsc, '-p', join(root, config), '--outDir', join(out, dir)], { stdio: 'inherit' });
  writeFileSync(join(out, dir, 'package.json'), JSON.stringify({ type }) + '\n');
}

if (check) {
  const files = (dir) =>
    readdirSync(dir, { recursive: true })
      .filter((f) => statSync(join(dir, f)).isFile())
      .map((f) => f.split('\\').join('/'))
      .sort();
  const want = files(out);
  const have = files(join(root, 'dist'));
  const stale = [...new Set([...want, ...have])].filter((f) => {
    try {
      return readFileSync(join(out, f), 'utf8') !== readFileSync(join(root, 'dist', f), 'utf8');
    } catch {
      return true;
    }
  });
  rmSync(out, { recursive: true, force: true });
  if (stale.length) {
    console.error(`dist/ is not what src/ compiles to (${stale.join(', ')}): run npm run build in clients/typescript`);
    process.exit(1);
  }
  console.log('dist/ is up to date with src/');
}
