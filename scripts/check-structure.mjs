// `npm run check:structure`: the rules of docs/architecture.md "Inside a service" that a reader should
// not have to check by hand. Fails (exit 1) and prints every breach of them:
// - an import circle among source files (type-only imports count: a circle of types is still
//   two modules that cannot be understood one without the other);
// - a `domain/` module that reaches, directly or through the modules it imports, a storage,
//   messaging or HTTP library (the domain decides; it never does I/O);
// - a store (a `store/` module, or @rs/store) that imports a messaging module (stores take
//   the outbox entries the use case made; they never build messages);
// - a use case (`app/`), a domain module, a store or a message builder (`messages/`) that
//   imports a service's consumers (`messaging/`): consumers call use cases, never the reverse.
import { readFileSync, readdirSync, statSync, existsSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { createRequire } from 'node:module';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const ts = createRequire(import.meta.url)('typescript');

const walk = (dir) =>
  readdirSync(dir).flatMap((name) => {
    const full = path.join(dir, name);
    if (statSync(full).isDirectory()) return walk(full);
    return name.endsWith('.ts') && !name.endsWith('.d.ts') ? [full] : [];
  });
const packages = ['libs', 'services'].flatMap((top) =>
  readdirSync(path.join(root, top)).map((name) => path.join(root, top, name)),
);
const sources = packages.flatMap((dir) => (existsSync(path.join(dir, 'src')) ? walk(path.join(dir, 'src')) : []));

/** `@rs/x` and `@rs/x/sub` → the source file its package exports them from. */
const workspace = new Map();
for (const dir of packages) {
  const manifest = JSON.parse(readFileSync(path.join(dir, 'package.json'), 'utf8'));
  for (const [subpath, target] of Object.entries(manifest.exports ?? { '.': { default: manifest.main } })) {
    const built = typeof target === 'string' ? target : target?.default;
    if (!built?.endsWith('.js')) continue;
    const source = path.join(dir, built.replace(/^(\.\/)?dist\//, 'src/').replace(/\.js$/, '.ts'));
    workspace.set(path.posix.join(manifest.name, subpath), source);
  }
}

/** A specifier as a source file of this repository, or as the external module it names. */
function resolve(from, specifier) {
  if (specifier.startsWith('.')) {
    const base = path.resolve(path.dirname(from), specifier).replace(/\.js$/, '');
    for (const candidate of [`${base}.ts`, path.join(base, 'index.ts')]) if (existsSync(candidate)) return candidate;
    throw new Error(`${path.relative(root, from)}: cannot resolve ${specifier}`);
  }
  return workspace.get(specifier) ?? specifier;
}

const imports = new Map(
  sources.map((file) => {
    const info = ts.preProcessFile(readFileSync(file, 'utf8'), true, true);
    return [file, [...new Set(info.importedFiles.map(({ fileName }) => resolve(file, fileName)))]];
  }),
);

const relative = (file) => (path.isAbsolute(file) ? path.relative(root, file) : file);
const breaches = [];

// Circles: the strongly connected components of more than one module (Tarjan).
{
  let index = 0;
  const state = new Map();
  const stack = [];
  const visit = (file) => {
    const own = { index, low: index, onStack: true };
    index += 1;
    state.set(file, own);
    stack.push(file);
    for (const next of imports.get(file) ?? []) {
      if (!imports.has(next)) continue;
      if (!state.has(next)) {
        visit(next);
        own.low = Math.min(own.low, state.get(next).low);
      } else if (state.get(next).onStack) own.low = Math.min(own.low, state.get(next).index);
    }
    if (own.low !== own.index) return;
    const component = [];
    let member;
    do {
      member = stack.pop();
      state.get(member).onStack = false;
      component.push(member);
    } while (member !== file);
    if (component.length > 1 || (imports.get(file) ?? []).includes(file))
      breaches.push(`import circle: ${component.map(relative).sort().join(' ↔ ')}`);
  };
  for (const file of imports.keys()) if (!state.has(file)) visit(file);
}

const under = (file, ...dirs) =>
  path.isAbsolute(file) && dirs.some((dir) => file.startsWith(path.join(root, dir) + path.sep));
const isDomain = (file) => file.split(path.sep).includes('domain');
const isStore = (file) => file.split(path.sep).includes('store') && !under(file, 'libs/testing');
const IO_LIBRARIES = ['mongoose', 'mongodb', 'amqplib', 'express', 'node:http', 'node:https', 'p-limit'];
const isIoLibrary = (file) =>
  IO_LIBRARIES.includes(file) ||
  under(file, 'libs/store', 'libs/messaging', 'libs/outbox-relay', 'libs/http', 'libs/runtime');
const isMessaging = (file) =>
  file === 'amqplib' ||
  under(file, 'libs/messaging', 'libs/outbox-relay') ||
  (path.isAbsolute(file) && file.split(path.sep).includes('messaging'));

// The domain: what a domain module reaches, through every module it imports.
for (const file of sources.filter(isDomain)) {
  const seen = new Set([file]);
  const queue = [[file, []]];
  while (queue.length) {
    const [current, via] = queue.shift();
    for (const next of imports.get(current) ?? []) {
      if (seen.has(next)) continue;
      seen.add(next);
      const way = [...via, next];
      if (isIoLibrary(next)) {
        breaches.push(`domain reaches I/O: ${relative(file)} → ${way.map(relative).join(' → ')}`);
        continue;
      }
      if (imports.has(next)) queue.push([next, way]);
    }
  }
}

// Stores never import messaging.
for (const file of sources.filter(isStore))
  for (const next of imports.get(file) ?? [])
    if (isMessaging(next)) breaches.push(`store imports messaging: ${relative(file)} → ${relative(next)}`);

// Consumers are above the use cases: nothing below them imports one.
const BELOW_CONSUMERS = ['app', 'domain', 'store', 'messages'];
const isBelowConsumers = (file) =>
  under(file, 'services') && file.split(path.sep).some((part) => BELOW_CONSUMERS.includes(part));
const isConsumer = (file) =>
  path.isAbsolute(file) && under(file, 'services') && file.split(path.sep).includes('messaging');
for (const file of sources.filter(isBelowConsumers))
  for (const next of imports.get(file) ?? [])
    if (isConsumer(next)) breaches.push(`a consumer imported from below: ${relative(file)} → ${relative(next)}`);

for (const breach of breaches) console.log(breach);
console.log(
  breaches.length === 0
    ? `structure: ${sources.length} source files, no import circle, the domain free of I/O, no store importing messaging, no consumer imported from below`
    : `structure: ${breaches.length} breach${breaches.length === 1 ? '' : 'es'} in ${sources.length} source files`,
);
process.exit(breaches.length === 0 ? 0 : 1);
