// The README's screenshots: every dashboard page at a phone's width (375 px) and a desktop's (1440 px),
// full length, with a shop's realistic data seeded through the APIs (tests/helpers/tour.ts).
//
//   bun run screenshots              writes docs/screenshots/<page>-<width>.png
//   bun run screenshots /tmp/shots   writes them elsewhere
//
// An operator's view of an account's page is the member's page with the account's name, so it is
// shown once, as the member sees it.

import { rmSync } from 'node:fs'
import { join, resolve } from 'node:path'
import { screenshot } from '../helpers/browser'
import { startTour, visit, WIDTHS } from '../helpers/tour'

const out = resolve(process.argv[2] ?? join(import.meta.dir, '../../docs/screenshots'))
rmSync(out, { recursive: true, force: true })
const tour = await startTour()
try {
  for (const stop of tour.stops) {
    if (stop.name === null) continue
    for (const width of WIDTHS) {
      const page = await visit(tour, stop, width)
      console.log(await screenshot(page, join(out, `${stop.name}-${width}.png`)))
    }
  }
} finally {
  await tour.close()
}
