// Preloaded by bun test (bunfig.toml): tests start real servers, databases and child processes.
import { setDefaultTimeout } from 'bun:test'

setDefaultTimeout(60_000)
