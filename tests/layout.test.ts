// The layout's rules, read from the source: imports point down, with no circle, not even of types.
// The shells (http/, dashboard/), the helpers (lib/, db/) and the providers never import a module, lib/
// imports only lib/, and no file of src/ takes part in an import cycle.

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
function cycles(graph: Map<string, string[]>): string[][] {
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
      component.push(relative(SRC, member))
    } while (member !== file)
    if (component.length > 1 || (graph.get(file) ?? []).includes(file)) found.push(component.sort())
  }
  for (const file of graph.keys()) if (!index.has(file)) visit(file)
  return found
}

const graph = importGraph()
const under = (folder: string) => (file: string) => relative(SRC, file).startsWith(`${folder}/`)

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

  test('lib/ imports only lib/', () => {
    const wrong = [...graph]
      .filter(([file]) => under('lib')(file))
      .flatMap(([file, imports]) => imports.filter((t) => !under('lib')(t)).map((t) => `${relative(SRC, file)} → ${relative(SRC, t)}`))
    expect(wrong).toEqual([])
  })
})
