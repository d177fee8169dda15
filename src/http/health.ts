// The health checks, for load balancers and orchestrators: /healthz (the process is up) and /readyz
// (the database is reachable and migrated). No credentials; exempt from REQUIRE_HTTPS.

import { Elysia, t, type DocumentDecoration } from 'elysia'
import type { Sql } from '../db/client'
import { migrationsApplied } from '../db/migrate'
import { ApiError } from './errors'
import { envelopeOf, errorsOf } from './openapi'
import { kind } from './routes'

/**
 * The answers of a health check, for its `detail.responses` (a response model would also make Elysia
 * check the handler's answer at run time: not wanted on the probe a load balancer polls).
 */
export function healthAnswers(status: string, ...errors: number[]): DocumentDecoration['responses'] {
  const answers: Record<string, any> = {
    200: {
      description: `status \`${status}\``,
      content: { 'application/json': { schema: envelopeOf(t.Object({ status: t.Literal(status) })) } },
    },
  }
  for (const [code, schema] of Object.entries(errorsOf(...errors))) {
    answers[code] = { description: schema.description, content: { 'application/json': { schema } } }
  }
  return answers
}

/** How long /readyz waits for the database before it answers 503. */
const READY_WAIT_MS = 2_000

export const healthRoutes = (sql: Sql) =>
  new Elysia({ name: 'health', detail: kind('health') })
    .get('/healthz', () => ({ success: true, data: { status: 'ok' } }), {
      detail: { tags: ['Health'], summary: 'The process is up', responses: healthAnswers('ok') },
    })
    .get(
      '/readyz',
      async () => {
        // Not ready when the database does not answer within READY_WAIT_MS either: its statement would
        // wait for a connection for longer (CONNECT_WAIT_SECONDS), past any probe's own timeout.
        const applied = migrationsApplied(sql).catch(() => false)
        if (await Promise.race([applied, Bun.sleep(READY_WAIT_MS).then(() => false)])) return { success: true, data: { status: 'ready' } }
        throw new ApiError('SERVICE_UNAVAILABLE', 'database not reachable or migrations not applied')
      },
      {
        detail: { tags: ['Health'], summary: 'The database is reachable and migrated', responses: healthAnswers('ready', 503) },
      },
    )
