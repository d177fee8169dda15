// The generated reference pages (docs/reference/{configuration, error-codes, cli, webhook-events,
// metrics}.md) are what `bun run docs:reference` writes from the code now: a change of a variable, an
// error code, a command, an event or a metric without running it fails here.

import { expect, test } from 'bun:test'
import { existsSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { REFERENCE_DIR, referencePages } from '../../src/docs/reference'
import { VARIABLES } from '../../src/config'
import { ERROR_STATUS } from '../../src/http/errors'
import { EVENT_TYPES } from '../../src/modules/webhooks/model'

const pages = referencePages()

test.each(Object.keys(pages))('docs/reference/%s is up to date (bun run docs:reference)', (name) => {
  const path = join(REFERENCE_DIR, name)
  expect({ name, exists: existsSync(path) }).toEqual({ name, exists: true })
  expect(readFileSync(path, 'utf8')).toBe(pages[name]!)
})

test('the pages hold every variable, error code, event, command and metric', () => {
  for (const name of Object.keys(VARIABLES)) expect(pages['configuration.md']).toContain(`| \`${name}\` |`)
  for (const code of Object.keys(ERROR_STATUS)) expect(pages['error-codes.md']).toContain(`| \`${code}\` |`)
  for (const event of EVENT_TYPES) expect(pages['webhook-events.md']).toContain(`## ${event}\n`)
  expect(pages['cli.md']).toContain('## quickstart\n')
  expect(pages['cli.md']).toContain('usage: bun run admin senders create')
  expect(pages['metrics.md']).toContain('| `messaging_handoffs_total` | counter | `provider`, `outcome` |')
  expect(pages['metrics.md']).toContain('| `messaging_db_connections` | gauge | `state` |')
})
