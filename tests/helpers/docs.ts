// The project's documentation as the tests read it: README.md, then every page under docs/. Tests that
// run the documents' shell examples as written find them here, whichever page holds them.

import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { Glob } from 'bun'

const ROOT = join(import.meta.dir, '..', '..')

/** README.md and docs/**\/*.md, README first, the rest by path. */
export const DOC_PAGES = ['README.md', ...[...new Glob('docs/**/*.md').scanSync(ROOT)].sort()]

/** One page's text, by its path from the repository's root (`docs/start/quick-start.md`). */
export const docPage = (path: string) => readFileSync(join(ROOT, path), 'utf8')

/** The first ```sh block containing `marker`, in README.md or a page of docs/ (undefined when none has it). */
export function shBlock(marker: string, pages: string[] = DOC_PAGES): string | undefined {
  for (const page of pages) {
    const block = [...docPage(page).matchAll(/```sh\n([\s\S]*?)```/g)].map((m) => m[1]!).find((b) => b.includes(marker))
    if (block !== undefined) return block
  }
  return undefined
}
