// Every relative link in README.md and docs/ (and ARCHITECTURE.md) goes somewhere: its file exists and
// its #anchor is a heading of that file (GitHub's anchors), and no page leaves a code fence open, so no
// heading or link below it turns into code. markdownlint (tests/docs/markdown.test.ts) checks links
// within one page only; this checks the links between pages.

import { expect, test } from 'bun:test'
import { existsSync, readFileSync, statSync } from 'node:fs'
import { dirname, join, relative } from 'node:path'
import { Glob } from 'bun'

const ROOT = join(import.meta.dir, '..', '..')
const PAGES = ['README.md', 'ARCHITECTURE.md', ...new Glob('docs/**/*.md').scanSync(ROOT)].sort()

const FENCE = /^ {0,3}(`{3,}|~{3,})(.*)$/

/** A page's lines outside code fences (blank inside them), and the fences it leaves open. */
function prose(text: string): { lines: string[]; open: string[] } {
  const lines = text.split('\n')
  const open: string[] = []
  let fence: { marker: string; line: number } | undefined
  const out = lines.map((line, i) => {
    const m = FENCE.exec(line)
    if (fence) {
      if (m && m[1]!.startsWith(fence.marker[0]!) && m[1]!.length >= fence.marker.length && m[2]!.trim() === '') fence = undefined
      // A fence with an info string inside a code block is another block's opening: the one before never closed.
      else if (m && m[2]!.trim() !== '') open.push(`line ${fence.line + 1} (a fence opens again at line ${i + 1})`)
      return ''
    }
    if (m) {
      fence = { marker: m[1]!, line: i }
      return ''
    }
    return line
  })
  if (fence) open.push(`line ${fence.line + 1} (never closed)`)
  return { lines: out, open }
}

/** GitHub's anchor of a heading: lower case, markup and punctuation dropped, spaces to hyphens. */
const slug = (heading: string) =>
  heading
    .replace(/\[([^\]]*)\]\([^)]*\)/g, '$1')
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{N}\s_-]/gu, '')
    .replace(/\s/g, '-')

const anchorsCache = new Map<string, Set<string>>()
function anchorsOf(file: string): Set<string> {
  let anchors = anchorsCache.get(file)
  if (anchors) return anchors
  anchors = new Set()
  const seen = new Map<string, number>()
  for (const line of prose(readFileSync(join(ROOT, file), 'utf8')).lines) {
    const m = /^#{1,6}\s+(.*?)\s*#*\s*$/.exec(line)
    if (!m) continue
    const base = slug(m[1]!)
    const n = seen.get(base) ?? 0
    seen.set(base, n + 1)
    anchors.add(n === 0 ? base : `${base}-${n}`)
  }
  anchorsCache.set(file, anchors)
  return anchors
}

/** The relative links of a page: [text](target) and ![alt](target), outside code. */
function linksOf(file: string): { target: string; line: number }[] {
  const links: { target: string; line: number }[] = []
  prose(readFileSync(join(ROOT, file), 'utf8')).lines.forEach((line, i) => {
    const text = line.replace(/`+[^`]*`+/g, '')
    for (const m of text.matchAll(/\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g)) {
      const target = m[1]!
      if (/^[a-z][a-z0-9+.-]*:/i.test(target)) continue // http:, https:, mailto:
      links.push({ target, line: i + 1 })
    }
  })
  return links
}

test('the pages are found', () => {
  expect(PAGES).toContain('README.md')
  expect(PAGES).toContain('docs/start/quick-start.md')
  expect(PAGES.length).toBeGreaterThan(30)
})

test('no page leaves a code fence open', () => {
  const open = PAGES.flatMap((file) => prose(readFileSync(join(ROOT, file), 'utf8')).open.map((where) => `${file}: ${where}`))
  expect(open).toEqual([])
})

test('every relative link and #anchor in README.md and docs/ resolves', () => {
  const dead: string[] = []
  let checked = 0
  for (const file of PAGES) {
    for (const { target, line } of linksOf(file)) {
      checked++
      const [path, anchor] = target.split('#') as [string, string | undefined]
      const resolved = path === '' ? file : relative(ROOT, join(ROOT, dirname(file), decodeURIComponent(path)))
      const where = `${file}:${line} → ${target}`
      if (resolved.startsWith('..') || !existsSync(join(ROOT, resolved))) {
        dead.push(`${where}: no such file`)
        continue
      }
      if (anchor === undefined) continue
      if (statSync(join(ROOT, resolved)).isDirectory() || !resolved.endsWith('.md')) continue
      if (!anchorsOf(resolved).has(anchor)) dead.push(`${where}: no heading #${anchor} in ${resolved}`)
    }
  }
  expect(dead).toEqual([])
  expect(checked).toBeGreaterThan(100)
})

test('the checker finds what it is for: a dead file, a dead anchor, an open fence', () => {
  expect(prose('```sh\necho\n## Heading\n```sh\nmore\n```\n').open).toEqual(['line 1 (a fence opens again at line 4)'])
  expect(prose('```sh\necho\n').open).toEqual(['line 1 (never closed)'])
  expect(slug('Bad input: 400, 413, 415 or 422')).toBe('bad-input-400-413-415-or-422')
  expect(slug('`webhook listen` [on a laptop](x.md)')).toBe('webhook-listen-on-a-laptop')
  expect(anchorsOf('README.md').has('start-in-60-seconds')).toBe(true)
})
