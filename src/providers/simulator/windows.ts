// The simulator's 24-hour customer windows. With SIM_REQUIRE_TEMPLATE the simulator refuses a
// free-form message to a number that has not written in within 24 hours (63016, as WhatsApp does);
// an operator makes a number "write in" with POST /admin/v1/simulator/inbound (admin-routes.ts) or
// `bun run admin simulator inbound PHONE`. The windows live in the database, so every instance agrees.
// (No Elysia here: the configuration, and so --help, loads the providers' folders.)

import type { Sql } from '../../db/client'
import { formatTimestamp } from '../../lib/time'
import { requirePhone } from '../../http/values'

/** Whether `phone` (normalised) wrote in within the last 24 hours. */
export async function windowOpen(sql: Sql, phone: string): Promise<boolean> {
  const [row] = await sql`select 1 from simulator_inbound where phone = ${phone} and last_inbound_at > now() - interval '24 hours'`
  return row !== undefined
}

/** A message from `phone` arrived now: its window is open for the next 24 hours. */
export async function openWindow(sql: Sql, tz: string, phoneInput: string): Promise<{ phone: string; window_until: string }> {
  const phone = requirePhone(phoneInput, 'phone')
  const [row] = await sql<{ until: Date }[]>`
    insert into simulator_inbound (phone, last_inbound_at) values (${phone}, now())
    on conflict (phone) do update set last_inbound_at = excluded.last_inbound_at
    returning last_inbound_at + interval '24 hours' as until`
  return { phone, window_until: formatTimestamp(row!.until, tz)! }
}
