// Builds the console (docs/console.md) into dist/: one script and one style sheet, named by the
// hash of their content (cached for good, replaced by a new name), and manifest.json naming
// them for the gateway, which writes the page itself.
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';

const here = path.dirname(fileURLToPath(import.meta.url));
const out = path.join(here, 'dist');
rmSync(out, { recursive: true, force: true });
mkdirSync(out, { recursive: true });
const result = await build({
  entryPoints: [path.join(here, 'src/main.tsx')],
  bundle: true,
  format: 'esm',
  target: ['es2022', 'chrome111', 'firefox113', 'safari16'],
  minify: true,
  sourcemap: false,
  jsx: 'automatic',
  jsxImportSource: 'preact',
  entryNames: 'console-[hash]',
  outdir: path.join(out, 'assets'),
  metafile: true,
  legalComments: 'none',
  logLevel: 'warning',
});
const outputs = Object.keys(result.metafile.outputs).map((file) => path.basename(file));
const manifest = {
  script: outputs.find((file) => file.endsWith('.js')),
  styles: outputs.find((file) => file.endsWith('.css')),
};
writeFileSync(path.join(out, 'manifest.json'), `${JSON.stringify(manifest, null, 2)}\n`);
