import { readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

/**
 * The structural rules of issue 33, checked on the source text of `src/` (no build, no engine):
 * an acyclic folder graph and file graph, no module-level mutable state, the store's mode read only
 * by the storage gateway, and the size bounds of files and functions. Each failure names the
 * offenders, so the message says what to move or split.
 */

const SRC = path.resolve(import.meta.dirname, '../src');
const MAX_FILE_LINES = 300;
const MAX_FUNCTION_LINES = 60;
/** The command line's entry point (bin/vulndb runs it): the one module that acts when loaded. */
const ENTRY_POINT = 'cli/main.ts';

interface SourceFile {
  /** Path under src/, with forward slashes (e.g. `decisions/routes.ts`). */
  name: string;
  text: string;
  ast: ts.SourceFile;
}

function listTs(dir: string): string[] {
  return readdirSync(dir).flatMap((entry) => {
    const full = path.join(dir, entry);
    if (statSync(full).isDirectory()) return listTs(full);
    return entry.endsWith('.ts') && !entry.endsWith('.d.ts') ? [full] : [];
  });
}

const files: SourceFile[] = listTs(SRC)
  .sort()
  .map((full) => {
    const text = readFileSync(full, 'utf8');
    const name = path.relative(SRC, full).split(path.sep).join('/');
    return { name, text, ast: ts.createSourceFile(name, text, ts.ScriptTarget.Latest, true) };
  });
const fileNames = new Set(files.map((f) => f.name));

/** The src file a relative specifier names (`./x.js` is `x.ts`), or undefined for packages and paths outside src. */
function resolve(from: string, specifier: string): string | undefined {
  if (!specifier.startsWith('.')) return undefined;
  const joined = path.posix.normalize(path.posix.join(path.posix.dirname(from), specifier));
  const candidates = [joined.replace(/\.js$/, '.ts'), `${joined}.ts`, `${joined}/index.ts`];
  return candidates.find((c) => fileNames.has(c));
}

/** Every src file a file imports: `import`, `import type` and `export … from`, all counted. */
function importsOf(file: SourceFile): string[] {
  const targets = new Set<string>();
  for (const statement of file.ast.statements) {
    const specifier =
      (ts.isImportDeclaration(statement) || ts.isExportDeclaration(statement)) &&
      statement.moduleSpecifier &&
      ts.isStringLiteral(statement.moduleSpecifier)
        ? statement.moduleSpecifier.text
        : undefined;
    const target = specifier === undefined ? undefined : resolve(file.name, specifier);
    if (target !== undefined && target !== file.name) targets.add(target);
  }
  return [...targets];
}

/** A folder is the first segment under src/; a file directly in src/ is a node of its own. */
const folderOf = (name: string): string => (name.includes('/') ? name.slice(0, name.indexOf('/')) : name);

type Graph = Map<string, Set<string>>;

function graphOf(node: (file: string) => string): Graph {
  const graph: Graph = new Map();
  for (const file of files) {
    const from = node(file.name);
    const edges = graph.get(from) ?? new Set<string>();
    graph.set(from, edges);
    for (const target of importsOf(file)) if (node(target) !== from) edges.add(node(target));
  }
  return graph;
}

/** The strongly connected components with more than one node (Tarjan): each is a cycle, or several sharing nodes. */
function cyclesOf(graph: Graph): string[][] {
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const found: string[][] = [];
  const visit = (v: string) => {
    index.set(v, index.size);
    low.set(v, index.get(v)!);
    stack.push(v);
    onStack.add(v);
    for (const w of graph.get(v) ?? []) {
      if (!index.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v)!, index.get(w)!));
    }
    if (low.get(v) !== index.get(v)) return;
    const component: string[] = [];
    let w: string;
    do {
      w = stack.pop()!;
      onStack.delete(w);
      component.push(w);
    } while (w !== v);
    if (component.length > 1) found.push(component.sort());
  };
  for (const v of [...graph.keys()].sort()) if (!index.has(v)) visit(v);
  return found;
}

/** Which imports of a cycle's members stay inside it: the arrows to look at when breaking it. */
function describeCycles(graph: Graph, cycles: string[][]): string {
  return cycles
    .map((members) => {
      const inside = new Set(members);
      const arrows = members.flatMap((m) => [...(graph.get(m) ?? [])].filter((t) => inside.has(t)).map((t) => `${m} → ${t}`));
      return `cycle of ${members.length}: ${arrows.join(', ')}`;
    })
    .join('\n');
}

/**
 * The rule for module-level state. A top-level `let` or `var` is state. A top-level `const` is
 * state when its initializer (read through `as`, `satisfies`, `!` and parentheses)
 *  - is a `new` expression (Map, Set, a Registry, a Histogram, a BlockList: anything), except a
 *    `new Set`/`new Map` declared `ReadonlySet`/`ReadonlyMap` (a lookup table no write compiles
 *    against) and a `new RegExp` without the g or y flag (no lastIndex to carry);
 *  - is a call of `Buffer.alloc`/`allocUnsafe`/`from`/`concat` (bytes anyone may overwrite);
 *  - is a call of a function of src/ (of the same file, or imported by name) that creates an
 *    object with `new` and hands it out: returns it, or keeps it in a local that it returns or
 *    that a closure it makes reads (a memo is such a closure).
 * Everything else is a constant: literals, frozen or plain object and array literals, functions,
 * classes, zod schemas (`z.…` chains and schemas derived from them), strings and lists computed
 * once from constants. ALLOWED lists the exceptions, each with its reason.
 */
const ALLOWED: Record<string, string> = {
  'domain/ids.ts NAMESPACE': 'the UUID namespace as bytes: only ever copied from, never written',
  'domain/ids.ts scratch':
    'the hashing buffer of uuidv5: each call writes namespace and name before hashing them, so nothing passes between calls; 5× faster ids for ingestion',
};

/** Top-level functions of a file, by name: declarations and `const f = (…) => …`. */
function functionsOf(file: SourceFile): Map<string, ts.FunctionLikeDeclaration> {
  const found = new Map<string, ts.FunctionLikeDeclaration>();
  for (const s of file.ast.statements) {
    if (ts.isFunctionDeclaration(s) && s.name && s.body) found.set(s.name.text, s);
    if (!ts.isVariableStatement(s)) continue;
    for (const d of s.declarationList.declarations) {
      if (ts.isIdentifier(d.name) && d.initializer && (ts.isArrowFunction(d.initializer) || ts.isFunctionExpression(d.initializer)))
        found.set(d.name.text, d.initializer);
    }
  }
  return found;
}

/** Whether a function hands out an object it creates with `new` (see the rule above); throws do not count. */
function handsOutNewObject(fn: ts.FunctionLikeDeclaration): boolean {
  if (!fn.body) return false;
  if (!ts.isBlock(fn.body)) return ts.isNewExpression(unwrap(fn.body));
  const held = new Set<string>();
  let handsOut = false;
  const uses = (node: ts.Node): boolean => (ts.isIdentifier(node) && held.has(node.text)) || ts.forEachChild(node, uses) === true;
  const visit = (node: ts.Node, nested: boolean): void => {
    if (ts.isThrowStatement(node)) return;
    if (!nested && ts.isVariableDeclaration(node) && node.initializer && ts.isNewExpression(unwrap(node.initializer)))
      held.add(node.name.getText());
    if (
      !nested &&
      ts.isBinaryExpression(node) &&
      node.operatorToken.kind === ts.SyntaxKind.EqualsToken &&
      ts.isNewExpression(unwrap(node.right))
    )
      held.add(node.left.getText());
    if (!nested && ts.isReturnStatement(node) && node.expression && (ts.isNewExpression(unwrap(node.expression)) || uses(node.expression)))
      handsOut = true;
    if (nested && uses(node)) handsOut = true;
    ts.forEachChild(node, (child) => visit(child, nested || ts.isFunctionLike(child)));
  };
  // Twice: the locals first, then who returns or captures them (a closure may come before an assignment).
  visit(fn.body, false);
  visit(fn.body, false);
  return handsOut;
}

function unwrap(node: ts.Expression): ts.Expression {
  let e = node;
  while (ts.isAsExpression(e) || ts.isSatisfiesExpression(e) || ts.isNonNullExpression(e) || ts.isParenthesizedExpression(e))
    e = e.expression;
  return e;
}

/** The function a name of a file calls: its own, or the one it imports by that name from src/. */
function calledFunction(file: SourceFile, name: string): ts.FunctionLikeDeclaration | undefined {
  const own = functionsOf(file).get(name);
  if (own) return own;
  for (const s of file.ast.statements) {
    if (!ts.isImportDeclaration(s) || !ts.isStringLiteral(s.moduleSpecifier)) continue;
    const bindings = s.importClause?.namedBindings;
    const element = bindings && ts.isNamedImports(bindings) ? bindings.elements.find((e) => e.name.text === name) : undefined;
    const target = element ? resolve(file.name, s.moduleSpecifier.text) : undefined;
    const source = target ? files.find((f) => f.name === target) : undefined;
    if (source && element) return functionsOf(source).get((element.propertyName ?? element.name).text);
  }
  return undefined;
}

function isState(file: SourceFile, d: ts.VariableDeclaration): boolean {
  if (!d.initializer) return false;
  const e = unwrap(d.initializer);
  if (ts.isNewExpression(e)) {
    const made = e.expression.getText();
    const annotated = d.type?.getText() ?? '';
    if ((made === 'Set' && annotated.startsWith('ReadonlySet')) || (made === 'Map' && annotated.startsWith('ReadonlyMap'))) return false;
    const flags = e.arguments?.[1];
    return !(made === 'RegExp' && (!flags || (ts.isStringLiteral(flags) && !/[gy]/.test(flags.text))));
  }
  if (!ts.isCallExpression(e)) return false;
  if (/^Buffer\.(alloc|allocUnsafe|from|concat)$/.test(e.expression.getText())) return true;
  const callee = ts.isIdentifier(e.expression) ? calledFunction(file, e.expression.text) : undefined;
  return callee !== undefined && handsOutNewObject(callee);
}

/** `file:line name` of every top-level declaration that holds state by the rule above. */
function moduleStateOf(file: SourceFile): string[] {
  const offenders: string[] = [];
  for (const statement of file.ast.statements) {
    if (!ts.isVariableStatement(statement)) continue;
    const isConst = (statement.declarationList.flags & ts.NodeFlags.Const) !== 0;
    for (const d of statement.declarationList.declarations) {
      const id = `${file.name} ${d.name.getText()}`;
      if (id in ALLOWED || (isConst && !isState(file, d))) continue;
      const line = file.ast.getLineAndCharacterOfPosition(d.getStart()).line + 1;
      offenders.push(`${file.name}:${line} ${d.name.getText()}${isConst ? '' : ' (let/var)'}`);
    }
  }
  return offenders;
}

const linesOf = (ast: ts.SourceFile, node: ts.Node): number =>
  ast.getLineAndCharacterOfPosition(node.getEnd()).line - ast.getLineAndCharacterOfPosition(node.getStart()).line + 1;

/** `file:line name (n lines)` of every function, method, accessor, constructor or arrow body longer than the bound. */
function longFunctionsOf(file: SourceFile): string[] {
  const offenders: string[] = [];
  const visit = (node: ts.Node) => {
    if (ts.isFunctionLike(node) && 'body' in node && node.body) {
      const body = node.body as ts.Node;
      const lines = linesOf(file.ast, body);
      if (lines > MAX_FUNCTION_LINES) {
        const line = file.ast.getLineAndCharacterOfPosition(node.getStart()).line + 1;
        const name = node.name?.getText() ?? (ts.isVariableDeclaration(node.parent) ? node.parent.name.getText() : '(anonymous)');
        offenders.push(`${file.name}:${line} ${name} (${lines} lines)`);
      }
    }
    ts.forEachChild(node, visit);
  };
  visit(file.ast);
  return offenders;
}

describe('the structure of src/ (issue 33)', () => {
  it('has no import cycle between folders, type imports counted', () => {
    const graph = graphOf(folderOf);
    const cycles = cyclesOf(graph);
    expect(cycles, `${graph.size} folder nodes; ${describeCycles(graph, cycles)}`).toEqual([]);
  });

  it('has no import cycle between files, type imports counted', () => {
    const graph = graphOf((f) => f);
    const cycles = cyclesOf(graph);
    expect(cycles, `${graph.size} files; ${describeCycles(graph, cycles)}`).toEqual([]);
  });

  it('holds no module-level mutable state: top-level declarations are constants', () => {
    expect(files.flatMap(moduleStateOf)).toEqual([]);
  });

  it('runs nothing at import: top-level statements are declarations, but in the CLI entry point', () => {
    // Listeners registered or counters touched at import time are state set up by loading a module.
    const declares = (s: ts.Statement) =>
      ts.isImportDeclaration(s) ||
      ts.isExportDeclaration(s) ||
      ts.isExportAssignment(s) ||
      ts.isFunctionDeclaration(s) ||
      ts.isClassDeclaration(s) ||
      ts.isInterfaceDeclaration(s) ||
      ts.isTypeAliasDeclaration(s) ||
      ts.isEnumDeclaration(s) ||
      ts.isModuleDeclaration(s) ||
      ts.isVariableStatement(s);
    const offenders = files
      .filter((f) => f.name !== ENTRY_POINT)
      .flatMap((f) =>
        f.ast.statements.filter((s) => !declares(s)).map((s) => `${f.name}:${f.ast.getLineAndCharacterOfPosition(s.getStart()).line + 1}`),
      );
    expect(offenders).toEqual([]);
  });

  it('reads the store mode only inside src/storage', () => {
    // A text check: the Store's `mode` is reached as `store.mode`, `opened.mode` or compared with
    // `.mode ===`; other `mode` fields in src (none today) would need their own name to pass.
    const offenders = files
      .filter((f) => !f.name.startsWith('storage/'))
      .flatMap((f) => f.text.split('\n').map((line, i) => ({ f, line, i })))
      .filter(({ line }) => /\b\w+\.mode\b/.test(line))
      .map(({ f, line, i }) => `${f.name}:${i + 1} ${line.trim()}`);
    expect(offenders).toEqual([]);
  });

  it(`keeps every file within ${MAX_FILE_LINES} lines`, () => {
    const long = files
      .map((f) => ({ f, lines: f.text.split('\n').length - (f.text.endsWith('\n') ? 1 : 0) }))
      .filter(({ lines }) => lines > MAX_FILE_LINES);
    expect(long.map(({ f, lines }) => `${f.name} (${lines} lines)`)).toEqual([]);
  });

  it(`keeps every function body within ${MAX_FUNCTION_LINES} lines`, () => {
    expect(files.flatMap(longFunctionsOf)).toEqual([]);
  });
});
