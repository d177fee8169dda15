// A member's overview: balance, price and how many messages the balance pays for.

import { Elysia } from 'elysia'
import { h } from '../jsx'
import { Layout } from '../layout'
import { type Dashboard, redirect, respond } from '../context'
import { getAccount } from '../../modules/admin/service'

export function overviewPages(d: Dashboard) {
  return new Elysia({ prefix: '/dashboard' }).get('', async ({ request }) => {
    const session = await d.sessionOf(request)
    if (!session) return redirect('/dashboard/sign-in')
    if (session.user.role === 'operator') return redirect('/dashboard/accounts')
    const account = await getAccount(d.sql, d.tz, session.user.account_id!)
    return respond(
      <Layout title="Overview" session={session}>
        <div class="stats">
          <div class="card stat">
            <div class="value">{account.wa_balance.toLocaleString('en')}</div>
            <div class="label">Balance ({d.config.currency})</div>
          </div>
          <div class="card stat">
            <div class="value">{account.cost_per_message.toLocaleString('en')}</div>
            <div class="label">Price per message</div>
          </div>
          <div class="card stat">
            <div class="value">{Math.floor(account.wa_balance / account.cost_per_message).toLocaleString('en')}</div>
            <div class="label">Messages the balance pays for</div>
          </div>
        </div>
      </Layout>,
    )
  })
}
