// Charging, refunding and recording hand-off outcomes. Each is one SQL statement, hence one
// transaction: the balance update (which row-locks the account), the messages and the ledger rows
// commit together, so balance = sum(ledger) at every moment and nothing is charged twice.

import type { Sql } from '../../db/client'
import type { ScheduledReport } from '../../providers/provider'
import { Batcher } from '../../lib/batch'

export type NewMessage = { phone: string; body: string; mediaUrl: string | null }
export type Charged = { ids: number[]; cost: number; balanceAfter: number }
export type Failure = { id: number; errorCode: number | null; errorMessage: string }

/** How long a charged message may wait for its hand-off before the recovery worker takes it over. */
export const HANDOFF_LEASE_SECONDS = 60

export const currentPrice = (sql: Sql, accountId: number) => sql<{ cost: number }[]>`
  select coalesce(
    (select cost_per_message from prices where account_id = ${accountId}),
    (select cost_per_message from prices where account_id is null)
  ) as cost`

/**
 * Charges the account the current price for every message and records them as queued, in one
 * statement. Returns null, with nothing changed, when the balance cannot pay for all of them.
 */
export async function chargeMessages(
  sql: Sql,
  owner: { accountId: number; keyId: number | null; campaignId?: number | null; contactId?: number | null },
  messages: NewMessage[],
): Promise<Charged | null> {
  const n = messages.length
  const rows = await sql<{ id: number; cost: number; balance: number }[]>`
    with price as (
      select coalesce(
        (select cost_per_message from prices where account_id = ${owner.accountId}),
        (select cost_per_message from prices where account_id is null)
      ) as cost
    ), debit as (
      update accounts set balance = balance - price.cost * ${n}
      from price
      where accounts.id = ${owner.accountId} and accounts.balance >= price.cost * ${n}
      returning accounts.balance, price.cost
    ), input as materialized (
      select nextval(pg_get_serial_sequence('messages', 'id')) as id, phone, body, media_url, ord
      from unnest(${messages.map((m) => m.phone)}::text[], ${messages.map((m) => m.body)}::text[],
                  ${messages.map((m) => m.mediaUrl) as string[]}::text[])
           with ordinality as i(phone, body, media_url, ord)
      where exists (select 1 from debit)
    ), inserted as (
      insert into messages (id, account_id, api_key_id, phone, body, media_url, status, cost, handoff_until)
      select input.id, ${owner.accountId}, ${owner.keyId}, phone, body, media_url, 'queued', debit.cost,
             now() + make_interval(secs => ${HANDOFF_LEASE_SECONDS})
      from input, debit
      returning id
    ), ledger_rows as (
      insert into ledger (account_id, kind, amount, balance_after, message_id)
      select ${owner.accountId}, 'charge', -debit.cost, debit.balance + debit.cost * (${n} - input.ord), input.id
      from input, debit
    )
    select input.id, debit.cost, debit.balance from input, debit order by input.ord`
  if (rows.length === 0) return null
  return { ids: rows.map((r) => r.id), cost: rows[0]!.cost, balanceAfter: rows[0]!.balance }
}

export type Accepted = { id: number; sid: string; reports: ScheduledReport[] }

/**
 * Records accepted hand-offs, with the status reports the provider schedules (the simulator's), in
 * one statement. Only messages still queued change, so a late second outcome is ignored.
 */
export async function markSent(sql: Sql, accepted: Accepted[]): Promise<number[]> {
  if (accepted.length === 0) return []
  const reports = accepted.flatMap((a) => a.reports.map((r) => ({ sid: a.sid, ...r })))
  const rows = await sql<{ id: number }[]>`
    with sent as (
      update messages m
      set status = 'sent', message_sid = v.sid, sent_at = now(), handoff_until = null
      from unnest(${accepted.map((a) => a.id)}::bigint[], ${accepted.map((a) => a.sid)}::text[]) as v(id, sid)
      where m.id = v.id and m.status = 'queued'
      returning m.id, m.message_sid
    ), scheduled as (
      insert into simulator_reports (message_sid, status, error_code, error_message, due_at)
      select r.sid, r.status, r.error_code, r.error_message, now() + make_interval(secs => r.after_ms / 1000.0)
      from unnest(${reports.map((r) => r.sid)}::text[], ${reports.map((r) => r.status)}::text[],
                  ${reports.map((r) => r.errorCode ?? null) as number[]}::int[], ${reports.map((r) => r.errorMessage ?? null) as string[]}::text[],
                  ${reports.map((r) => r.afterMs)}::int[]) as r(sid, status, error_code, error_message, after_ms)
      where r.sid in (select message_sid from sent)
    )
    select id from sent`
  return rows.map((r) => r.id)
}

/**
 * Marks failed hand-offs `failed` and refunds exactly what each was charged, with one ledger row per
 * message. Only messages still queued are refunded, so a refund can never happen twice.
 */
export async function refundFailed(sql: Sql, failures: Failure[]): Promise<number[]> {
  if (failures.length === 0) return []
  const rows = await sql<{ id: number }[]>`
    with failed as (
      update messages m
      set status = 'failed', failed_at = now(), refunded_at = now(), handoff_until = null,
          error_code = v.error_code, error_message = v.error_message
      from unnest(${failures.map((f) => f.id)}::bigint[], ${failures.map((f) => f.errorCode) as number[]}::int[],
                  ${failures.map((f) => f.errorMessage)}::text[]) as v(id, error_code, error_message)
      where m.id = v.id and m.status = 'queued'
      returning m.id, m.account_id, m.cost
    ), per_account as (
      select account_id, sum(cost)::bigint as total from failed group by account_id
    ), credited as (
      update accounts set balance = accounts.balance + per_account.total
      from per_account
      where accounts.id = per_account.account_id
      returning accounts.id, accounts.balance - per_account.total as balance_before
    ), ledger_rows as (
      insert into ledger (account_id, kind, amount, balance_after, message_id)
      select failed.account_id, 'refund', failed.cost,
             credited.balance_before + sum(failed.cost) over (partition by failed.account_id order by failed.id),
             failed.id
      from failed join credited on credited.id = failed.account_id
    )
    select id from failed`
  return rows.map((r) => r.id)
}

export type SingleCharge = { accountId: number; keyId: number; message: NewMessage }

/**
 * Charges one message each for several requests of different accounts in one statement: what a
 * group commit of concurrent single sends writes. Account rows are locked in id order, so concurrent
 * batches (of this or another instance) cannot deadlock. Each request is still all-or-nothing: a
 * short balance gets null, with nothing changed for it.
 */
export async function chargeSingles(sql: Sql, requests: SingleCharge[]): Promise<(Charged | null)[]> {
  const rows = await sql<{ ord: number; id: number; cost: number; balance: number }[]>`
    with input as (
      select * from unnest(${requests.map((r) => r.accountId)}::bigint[], ${requests.map((r) => r.keyId)}::bigint[],
                           ${requests.map((r) => r.message.phone)}::text[], ${requests.map((r) => r.message.body)}::text[],
                           ${requests.map((r) => r.message.mediaUrl) as string[]}::text[])
        with ordinality as i(account_id, key_id, phone, body, media_url, ord)
    ), locked as (
      select a.id, a.balance, coalesce(p.cost_per_message, g.cost_per_message) as cost
      from accounts a
      left join prices p on p.account_id = a.id
      cross join (select cost_per_message from prices where account_id is null) g
      where a.id in (select account_id from input)
      order by a.id
      for update of a
    ), debit as (
      update accounts a set balance = a.balance - l.cost
      from locked l
      where a.id = l.id and l.balance >= l.cost
      returning a.id, a.balance, l.cost
    ), charged as materialized (
      select nextval(pg_get_serial_sequence('messages', 'id')) as id, i.*, d.cost, d.balance
      from input i join debit d on d.id = i.account_id
    ), inserted as (
      insert into messages (id, account_id, api_key_id, phone, body, media_url, status, cost, handoff_until)
      select id, account_id, key_id, phone, body, media_url, 'queued', cost, now() + make_interval(secs => ${HANDOFF_LEASE_SECONDS})
      from charged
    ), ledger_rows as (
      insert into ledger (account_id, kind, amount, balance_after, message_id)
      select account_id, 'charge', -cost, balance, id from charged
    )
    select ord::int as ord, id, cost, balance from charged`
  const byOrd = new Map(rows.map((r) => [r.ord, r]))
  return requests.map((_, i) => {
    const row = byOrd.get(i + 1)
    return row ? { ids: [row.id], cost: row.cost, balanceAfter: row.balance } : null
  })
}

/** Group commit of single-send charges: each write holds at most one request per account. */
export function createSingleCharger(sql: Sql): (request: SingleCharge) => Promise<Charged | null> {
  const batcher = new Batcher<SingleCharge, Charged | null>(async (requests) => {
    const out: (Charged | null)[] = new Array(requests.length)
    // Rounds of distinct accounts: two sends of one account in one statement would share one lock.
    const rounds: number[][] = []
    const seen = new Map<number, number>()
    requests.forEach((r, i) => {
      const round = seen.get(r.accountId) ?? 0
      seen.set(r.accountId, round + 1)
      ;(rounds[round] ??= []).push(i)
    })
    for (const round of rounds) {
      const results = await chargeSingles(
        sql,
        round.map((i) => requests[i]!),
      )
      round.forEach((i, j) => (out[i] = results[j]!))
    }
    return out
  })
  return (request) => batcher.add(request)
}
