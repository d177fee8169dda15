// Before each test file (bunfig.toml [test] preload): this run's migrated database, built by the run's
// first file and found by every other (tests/helpers/db.ts), so that no test or hook waits for it
// within its time bound.

import { prepareTestDatabases } from './helpers/db'

await prepareTestDatabases()
