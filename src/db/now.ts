// The time a statement takes as its now, from the clock in Deps: the database's own now() in
// production (one clock for every instance), the test's time under a test clock (River's
// `coalesce($now, now())`). Every statement that decides by time uses it instead of now().

import type { Clock } from '../lib/clock'
import type { Db, Fragment } from './client'

/** `now()`, or the clock's time when it sets one: a fragment for a statement of `sql`. */
export const nowOf = (sql: Db, clock: Pick<Clock, 'sqlNow'>): Fragment => sql`coalesce(${clock.sqlNow()}::timestamptz, now())`
