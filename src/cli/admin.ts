// `bun run admin <command>`: the operator's command line from the source tree (run.ts; the single
// binary runs the same one as `messaging-api admin <command>`).

import { runAdmin } from './run'
import { SOURCE } from './program'

process.exitCode = await runAdmin(process.argv.slice(2), SOURCE)
