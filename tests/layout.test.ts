// The layout's rules, read from the source: imports point down, with no circle, not even of types.
// The shells (http/, dashboard/), the helpers (lib/, db/) and the providers never import a module, lib/
// imports only lib/, and no file of src/ takes part in an import cycle. The same holds for folders: the
// nouns (the folders of src/modules/) form no circle either, pages aside (see isPage).

import { describe, expect, test } from 'bun:test'
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs'
import { dirname, join, relative, resolve } from 'node:path'

const SRC = resolve(import.meta.dir, '../src')

function sourceFiles(dir: string, out: string[] = []): string[] {
  for (const name of readdirSync(dir)) {
    const path = join(dir, name)
    if (statSync(path).isDirectory()) sourceFiles(path, out)
    else if (/\.tsx?$/.test(name) && !name.endsWith('.d.ts')) out.push(path)
  }
  return out
}

/** Every file of src/ with the files of src/ it imports (relative imports, types included). */
function importGraph(): Map<string, string[]> {
  const graph = new Map<string, string[]>()
  for (const file of sourceFiles(SRC)) {
    const imports: string[] = []
    for (const match of readFileSync(file, 'utf8').matchAll(/(?:from|import)\s*\(?\s*['"](\.{1,2}\/[^'"]+)['"]/g)) {
      const base = resolve(dirname(file), match[1]!)
      const target = ['', '.ts', '.tsx', '/index.ts'].map((ext) => base + ext).find((p) => existsSync(p) && statSync(p).isFile())
      if (target?.startsWith(SRC) && /\.tsx?$/.test(target)) imports.push(target)
    }
    graph.set(file, imports)
  }
  return graph
}

/** The import cycles (strongly connected components of more than one file, or a file importing itself). */
function cycles(graph: Map<string, string[]>, name: (node: string) => string = (file) => relative(SRC, file)): string[][] {
  let next = 0
  const index = new Map<string, number>()
  const low = new Map<string, number>()
  const stack: string[] = []
  const onStack = new Set<string>()
  const found: string[][] = []
  const visit = (file: string) => {
    index.set(file, next)
    low.set(file, next++)
    stack.push(file)
    onStack.add(file)
    for (const target of graph.get(file) ?? []) {
      if (!index.has(target)) {
        visit(target)
        low.set(file, Math.min(low.get(file)!, low.get(target)!))
      } else if (onStack.has(target)) low.set(file, Math.min(low.get(file)!, index.get(target)!))
    }
    if (low.get(file) !== index.get(file)) return
    const component: string[] = []
    let member: string
    do {
      member = stack.pop()!
      onStack.delete(member)
      component.push(name(member))
    } while (member !== file)
    if (component.length > 1 || (graph.get(file) ?? []).includes(file)) found.push(component.sort())
  }
  for (const file of graph.keys()) if (!index.has(file)) visit(file)
  return found
}

const graph = importGraph()
const under = (folder: string) => (file: string) => relative(SRC, file).startsWith(`${folder}/`)

const MODULES = join(SRC, 'modules')

/**
 * Pages are a layer above the nouns: a page may show what several nouns hold (an account's overview
 * shows its senders, budgets and messages), so what a page imports is not an edge between nouns. A page
 * is a .tsx file of a noun: JSX is written only for the dashboard (pages.tsx, key-pages.tsx, forms.tsx,
 * event-cell.tsx, ...). The dashboard's shell (src/dashboard/) imports no module at all (above).
 */
const isPage = (file: string) => under('modules')(file) && file.endsWith('.tsx')

/** The noun (folder of src/modules/) a file belongs to, or undefined outside src/modules/. */
const nounOf = (file: string) => (under('modules')(file) ? relative(MODULES, file).split('/')[0] : undefined)

/**
 * Edges between nouns allowed to close a circle (`from -> to`), each saying why it cannot point the
 * other way. Keep it short.
 */
const NOUN_EXCEPTIONS: Record<string, string> = {
  // The providers' callback route (inbound/callbacks.ts) takes every signed notification a provider
  // posts and hands each part to its owner: Meta's template notices to templates. Templates belong to
  // senders, and a sender's directory reads the 24-hour window from inbound, so this edge closes a
  // circle; the route is an edge over the nouns, like a page, kept where the issue put it.
  'inbound -> templates': 'the provider callback route hands template notices to their owner',
  // A customer's link (a user id named with its phone, inbound/customers.ts) re-keys its rows in the link's
  // transaction, its messaging-limit uses among them (budgets/service.ts), while the budget's guard reads
  // the 24-hour window from inbound: the re-key is one statement on budgets' table, kept with its owner.
  'inbound -> budgets': "a customer's link re-keys its messaging-limit uses in the link's transaction",
}

/**
 * The graph of nouns: an edge from one noun to another for every import (types included) of a file of
 * the first, not a page, from a file of the second; each edge with the file imports that make it.
 */
function nounGraph(files: Map<string, string[]>): Map<string, Map<string, string[]>> {
  const nouns = new Map<string, Map<string, string[]>>()
  for (const [file, imports] of files) {
    const from = nounOf(file)
    if (from === undefined || isPage(file)) continue
    const edges = nouns.get(from) ?? new Map<string, string[]>()
    nouns.set(from, edges)
    for (const target of imports) {
      const to = nounOf(target)
      if (to === undefined || to === from || NOUN_EXCEPTIONS[`${from} -> ${to}`]) continue
      edges.set(to, [...(edges.get(to) ?? []), `${relative(MODULES, file)} → ${relative(MODULES, target)}`])
    }
  }
  return nouns
}

/**
 * Each circle among the nouns (a strongly connected component of the noun graph), told as one cycle
 * through it and every edge inside it with the file imports that make it.
 */
function nounCycles(nouns: Map<string, Map<string, string[]>>): string[] {
  const graph = new Map([...nouns].map(([noun, edges]) => [noun, [...edges.keys()]]))
  return cycles(graph, (noun) => noun).map((component) => {
    const inside = new Set(component)
    // One cycle through the component: the shortest way back from its first noun to itself.
    const start = component[0]!
    const cameFrom = new Map<string, string>()
    const queue = [start]
    while (queue.length > 0 && !cameFrom.has(start)) {
      const noun = queue.shift()!
      for (const next of graph.get(noun) ?? [])
        if (inside.has(next) && !cameFrom.has(next)) {
          cameFrom.set(next, noun)
          queue.push(next)
        }
    }
    const path: string[] = []
    for (let noun = cameFrom.get(start)!; noun !== start; noun = cameFrom.get(noun)!) path.unshift(noun)
    const edges = component.flatMap((from) =>
      [...nouns.get(from)!].filter(([to]) => inside.has(to)).map(([to, imports]) => `  ${from} → ${to}: ${imports.join(', ')}`),
    )
    return [`${[start, ...path, start].join(' → ')} (${component.join(', ')})`, ...edges].join('\n')
  })
}

describe('the layout', () => {
  test('no import cycle in src/, types included', () => {
    expect(cycles(graph)).toEqual([])
  })

  test('the cycle check finds a cycle when there is one', () => {
    const a = join(SRC, 'a.ts')
    const b = join(SRC, 'b.ts')
    expect(
      cycles(
        new Map([
          [a, [b]],
          [b, [a]],
        ]),
      ),
    ).toEqual([['a.ts', 'b.ts']])
  })

  test('the shells, the helpers and the providers import no module', () => {
    const wrong: string[] = []
    for (const [file, imports] of graph) {
      if (!['http', 'dashboard', 'lib', 'db', 'providers'].some((folder) => under(folder)(file))) continue
      for (const target of imports) if (under('modules')(target)) wrong.push(`${relative(SRC, file)} → ${relative(SRC, target)}`)
    }
    expect(wrong).toEqual([])
  })

  test('no cycle among the nouns (the folders of src/modules/), types included, pages aside', () => {
    expect(nounCycles(nounGraph(graph))).toEqual([])
  })

  test('the noun check finds a cycle when there is one, and ignores pages', () => {
    const file = (path: string) => join(MODULES, path)
    const files = new Map([
      [file('a/service.ts'), [file('b/model.ts')]],
      [file('b/model.ts'), [file('c/service.ts')]],
      [file('c/service.ts'), [file('a/service.ts')]],
      [file('d/pages.tsx'), [file('a/service.ts')]],
      [file('a/pages.tsx'), [file('d/service.ts')]],
    ])
    expect(nounCycles(nounGraph(files))).toEqual([
      [
        'a → b → c → a (a, b, c)',
        '  a → b: a/service.ts → b/model.ts',
        '  b → c: b/model.ts → c/service.ts',
        '  c → a: c/service.ts → a/service.ts',
      ].join('\n'),
    ])
  })

  test("a noun's files other than pages import no page of another noun", () => {
    const wrong = [...graph]
      .filter(([file]) => under('modules')(file) && !isPage(file))
      .flatMap(([file, imports]) =>
        imports.filter((t) => isPage(t) && nounOf(t) !== nounOf(file)).map((t) => `${relative(MODULES, file)} → ${relative(MODULES, t)}`),
      )
    expect(wrong).toEqual([])
  })

  test('lib/ imports only lib/', () => {
    const wrong = [...graph]
      .filter(([file]) => under('lib')(file))
      .flatMap(([file, imports]) => imports.filter((t) => !under('lib')(t)).map((t) => `${relative(SRC, file)} → ${relative(SRC, t)}`))
    expect(wrong).toEqual([])
  })
})
