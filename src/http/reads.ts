// The one question a list or export asks before it reads: which database answers this request
// (the replica, or the primary while the replica lags behind the caller's own last write; db/replica.ts).

import type { ReadRouter } from '../db/replica'
import { callerOf } from './access-log'

export const readSql = (deps: { reads: ReadRouter }, request: Request) => deps.reads.read(callerOf(request))
