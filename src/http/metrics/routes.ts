// GET /metrics in the Prometheus text format: the process's own counters (measures.ts) and the
// database-wide queue depths (queues.ts). On the service's port it takes the admin token, as the admin
// API does; with METRICS_PORT, a second listener on 127.0.0.1 serves it without credentials, for a
// Prometheus or an agent on the same machine (it is never bound to another address).

import { Elysia } from 'elysia'
import type { Config } from '../../config'
import type { Sql } from '../../db/client'
import type { Clock } from '../../lib/clock'
import { CONTENT_TYPE, exposition } from '../../lib/metrics'
import { adminAuth } from '../admin-auth'
import { kind } from '../routes'
import { registry } from './measures'
import { queueFamilies } from './queues'

export const METRICS_PATH = '/metrics'

/** One scrape: every family, this process's first, then the database's. */
export async function scrape(sql: Sql, clock: Clock): Promise<Response> {
  const body = exposition([...registry.families(), ...(await queueFamilies(sql, clock))])
  return new Response(body, { headers: { 'content-type': CONTENT_TYPE, 'cache-control': 'no-store' } })
}

const SAMPLE = `# HELP messaging_handoffs_total Hand-off attempts to a provider by outcome: ...
# TYPE messaging_handoffs_total counter
messaging_handoffs_total{provider="simulator",outcome="accepted"} 1520
messaging_handoffs_total{provider="simulator",outcome="refused"} 3
# HELP messaging_webhook_events_pending Webhook events waiting for delivery, retries included (database-wide)
# TYPE messaging_webhook_events_pending gauge
messaging_webhook_events_pending 12
`

export const metricsRoutes = (config: Config, sql: Sql, clock: Clock) =>
  new Elysia({ name: 'metrics', detail: kind('admin') }).use(adminAuth(config)).get(METRICS_PATH, () => scrape(sql, clock), {
    detail: {
      tags: ['Metrics'],
      summary: 'Metrics in the Prometheus text format',
      description:
        "The Prometheus text exposition format 0.0.4 (`text/plain; version=0.0.4`), not the envelope: this process's own " +
        'counters and histograms (requests by route template, method and status code; hand-offs by provider and outcome; ' +
        'throttling answers and pacing waits; webhook attempts by outcome; balance movements; transactions of its database ' +
        'pool), and gauges read from the database at scrape time, the same from every instance (queued hand-offs, pending ' +
        "webhook events and the oldest one's age, parked status reports, campaigns sending, connections by state). Scrape " +
        'every instance. The database read is cached for 5 s and bounded by a 2 s statement timeout ' +
        '(`messaging_queues_read_success` 0 when it failed). With `METRICS_PORT` set, the same answer is served on ' +
        '`127.0.0.1:METRICS_PORT/metrics` without credentials. The README lists every metric.',
      responses: {
        200: {
          description: 'The metrics, in the text exposition format',
          content: { 'text/plain; version=0.0.4; charset=utf-8': { schema: { type: 'string', example: SAMPLE } } },
        },
      },
    },
  })

/** The METRICS_PORT listener: GET /metrics without credentials, on loopback only. */
export function serveMetrics(sql: Sql, clock: Clock, port: number): { url: string; stop(): Promise<void> } {
  const server = Bun.serve({
    hostname: '127.0.0.1',
    port,
    async fetch(request) {
      if (new URL(request.url).pathname !== METRICS_PATH) {
        return new Response('not found: this listener serves GET /metrics only\n', {
          status: 404,
          headers: { 'content-type': 'text/plain' },
        })
      }
      if (request.method !== 'GET') {
        return new Response('method not allowed\n', { status: 405, headers: { allow: 'GET', 'content-type': 'text/plain' } })
      }
      return scrape(sql, clock)
    },
  })
  return { url: `http://127.0.0.1:${server.port}${METRICS_PATH}`, stop: () => server.stop(true) }
}
