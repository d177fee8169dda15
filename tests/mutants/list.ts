// The guards that keep a charge, a refund, a hand-off, a status event and a webhook delivery exactly
// once, each removed on its own by `bun run mutants` (tests/mutants/run.ts): the named tests must go
// red with it, or the guard is not proven. A mutation is one or more exact edits; each `find` must
// occur exactly once in its file, or the run fails naming the mutation (code moves: a mutation that
// no longer applies must not pass silently). Adding a guard's mutation is one entry here; README's
// table ("Every guard proven") is `bun run mutants --list`, and tests/mutants/list.test.ts checks both.

export type Edit = { file: string; find: string; replace: string }

export type Mutation = {
  /** Short, unique: `bun run mutants <name>` runs it alone. */
  name: string
  /** The promise the guard keeps, broken: what goes wrong without it. */
  breaks: string
  edits: Edit[]
  /** The test files that must fail with the mutation (relative to the repository). */
  tests: string[]
  /** `bun test -t`: only the tests whose name matches (a regular expression). */
  filter?: string
  /**
   * Where its tests run: `postgres` when the killing test needs PostgreSQL (two sessions at once, a TCP
   * proxy), `embedded` when it needs the embedded database (the DATA_DIR lock); unset: either, on
   * PostgreSQL when DATABASE_URL is set.
   */
  database?: 'postgres' | 'embedded'
}

const LEDGER = 'src/modules/ledger/service.ts'
const HANDOFF = 'src/modules/messages/handoff.ts'
const RECOVERY = 'src/workers/handoff-recovery.ts'
const IDEMPOTENCY = 'src/http/idempotency.ts'
const RECEIVER = 'src/modules/status/receiver.ts'
const DELIVERY = 'src/workers/webhook-delivery.ts'
const MACHINE = 'src/modules/status/machine.ts'
const LATE = 'tests/status/late-failures.test.ts'
const SENDERS = 'src/modules/senders/directory.ts'
const SENDER_SENDS = 'tests/senders/send.test.ts'
const SENDER_CALLBACKS = 'tests/senders/callbacks.test.ts'
const TENANTS = 'tests/senders/tenants.test.ts'
const SENDER_HEALTH = 'tests/senders/health.test.ts'
const EVENTS = 'tests/webhooks/events.test.ts'
const ADMISSION = 'src/modules/messages/admission.ts'
const QUOTE = 'tests/messages/quote.test.ts'
const WINDOW_TESTS = 'tests/inbound/window.test.ts'
const LIMIT_GUARD = 'src/modules/budgets/guard.ts'
const LIMIT_TAKE = 'sql/0054_messaging_take.sql'
const LIMIT_TESTS = 'tests/budgets/limit.test.ts'
const OPT_OUTS = 'tests/optouts/optouts.test.ts'
const RICH = 'src/modules/messages/rich.ts'
const OPT_OUT_SERVICE = 'src/modules/optouts/service.ts'
const OPT_OUT_RACES = 'tests/optouts/races.outer.test.ts'
const SENDER_SERVICE = 'src/modules/senders/service.ts'
const META_WEBHOOK = 'src/providers/meta/webhook.ts'
const TEMPLATE_NOTICES = 'src/modules/templates/notices.ts'
const TEMPLATE_WEBHOOKS = 'tests/templates/webhooks.test.ts'
const PRICES = 'tests/messages/prices.test.ts'

// The opt-out's lock of its account's row (setOptOut), taken away.
const optOutUnlocked: Edit = {
  file: OPT_OUT_SERVICE,
  find: 'select 1 from accounts where id = ${change.accountId} for no key update',
  replace: 'select 1 from accounts where id = ${change.accountId}',
}

// The refund's guard: only a message still queued is marked failed and refunded (both places: the
// accounts it locks and the messages it changes).
const refundQueued: Edit[] = [
  {
    file: LEDGER,
    find: "where id in (select account_id from messages where id = any(${failures.map((f) => f.id)}::bigint[]) and status = 'queued')",
    replace: 'where id in (select account_id from messages where id = any(${failures.map((f) => f.id)}::bigint[]))',
  },
  {
    file: LEDGER,
    find: "where m.id = v.id and m.status = 'queued' and m.account_id in (select id from locked)",
    replace: 'where m.id = v.id and m.account_id in (select id from locked)',
  },
]

export const MUTATIONS: Mutation[] = [
  {
    name: 'form-token-reused',
    breaks: 'a top-up booked twice: a dashboard form sent again (Back, a replay) is done again instead of refused',
    edits: [
      {
        file: 'src/dashboard/context.tsx',
        find: 'if (!(await useFormToken(tx, deps.clock, nonce))) return null',
        replace: 'await useFormToken(tx, deps.clock, nonce)',
      },
    ],
    tests: ['tests/dashboard/flow.test.ts'],
    filter: 'a replayed top-up',
  },
  {
    name: 'auth-lookup-deadline',
    breaks: 'a key lookup whose statement never comes back holds every later request of the process behind it, for ever',
    edits: [{ file: 'src/http/auth.ts', find: 'ms: LOOKUP_DEADLINE_MS,', replace: 'ms: 600_000,' }],
    tests: ['tests/http/auth-stall.outer.test.ts'],
    database: 'postgres',
  },
  {
    name: 'campaign-handoff-failure-uncaught',
    breaks:
      'a campaign hand-off failing on the database ends the whole process (an unhandled rejection) instead of leaving its message to recovery',
    edits: [
      {
        file: 'src/modules/campaigns/engine.ts',
        find: '            .catch((error: unknown) => {\n              failed++',
        replace: '            .then((error: unknown) => {\n              failed++',
      },
    ],
    tests: ['tests/campaigns/handoff-failure.test.ts'],
  },
  {
    name: 'topup-amount-refilled',
    breaks: 'a top-up booked twice: after Back, a browser with scripts off refills the amount, and one click sends it again',
    edits: [
      {
        file: 'src/modules/accounts/pages.tsx',
        find: '            autocomplete="off"\n            required',
        replace: '            required',
      },
    ],
    tests: ['tests/dashboard/topup-back-browser.outer.test.ts'],
    filter: 'with scripts off',
  },
  {
    name: 'refund-queued',
    breaks: 'a sent message refunded: the late refusal of a holder that lost its lease undoes the sending of the new holder',
    edits: refundQueued,
    tests: ['tests/messages/handoff-lease.test.ts'],
    filter: 'late refusal',
  },
  {
    name: 'refund-queued-lost-commit',
    breaks: 'a refund twice: the refund written again after its COMMIT answer was lost',
    edits: refundQueued,
    tests: ['tests/messages/lost-commit.outer.test.ts'],
    filter: 'refund',
    database: 'postgres',
  },
  {
    name: 'marksent-queued',
    breaks: 'a refunded message later marked sent: the late acceptance of a holder that lost its lease',
    edits: [{ file: HANDOFF, find: "where m.id = v.id and m.status = 'queued'", replace: 'where m.id = v.id' }],
    tests: ['tests/messages/handoff-lease.test.ts'],
    filter: 'late acceptance',
  },
  {
    name: 'lease-holder-token',
    breaks: 'a message handed over twice: a holder whose message was taken over still renews its lease and sends it',
    edits: [
      {
        file: HANDOFF,
        find: "where m.id = v.id and m.handoff_token = v.token and m.status = 'queued' and m.quarantined_at is null",
        replace: "where m.id = v.id and m.status = 'queued' and m.quarantined_at is null",
      },
    ],
    tests: ['tests/messages/pace.test.ts'],
    filter: 'taken over while it waits',
  },
  {
    name: 'lease-check-before-attempt',
    breaks: 'a message handed over twice: the pool hands a message over without renewing its lease first',
    edits: [
      {
        file: HANDOFF,
        find: "if (claim === 'lost') {",
        replace: 'if (false) {',
      },
    ],
    tests: ['tests/messages/handoff-lease.test.ts'],
    filter: 'outlives its lease',
  },
  {
    name: 'lease-check-after-slot-wait',
    breaks: 'a message handed over twice: a message taken over while it waited for its slot at the pace is sent by the waiter too',
    edits: [
      {
        file: HANDOFF,
        find: "if (claim === 'lost') {",
        replace: "if (claim === 'lost' && waitMs === 0) {",
      },
    ],
    tests: ['tests/messages/pace.test.ts'],
    filter: 'taken over while it waits',
  },
  {
    name: 'heartbeat-renews',
    breaks:
      'a message handed over twice: a live holder waiting for a slow provider (or for the pool) lets its lease run out, and recovery sends it again',
    edits: [
      {
        file: HANDOFF,
        find: 'update messages m set handoff_until = ${nowOf(sql, clock)} + make_interval(secs => ${leaseSeconds})\n      from unnest(${ids}::bigint[]',
        replace: 'update messages m set handoff_until = m.handoff_until\n      from unnest(${ids}::bigint[]',
      },
    ],
    tests: ['tests/messages/handoff-lease.test.ts'],
    filter: 'outlive the lease under a live holder',
  },
  {
    name: 'pace-slot-wait',
    breaks: "the provider's rate passed: hand-offs go as fast as the pool allows, and the provider throttles them",
    edits: [{ file: HANDOFF, find: 'if (waitMs > 0) await clock.sleep(waitMs)', replace: '' }],
    tests: ['tests/messages/pace.test.ts'],
    filter: 'a bulk at the pace|share one pace',
  },
  {
    name: 'throttle-retried',
    breaks: 'a throttled message refunded as failed: a throttling answer ends the hand-off instead of waiting for Retry-After',
    edits: [{ file: HANDOFF, find: 'if (clock.now().getTime() + retryAfterMs < message.validUntilMs) {', replace: 'if (false) {' }],
    tests: ['tests/messages/pace.test.ts'],
    filter: 'throttling answers',
  },
  {
    name: 'single-slot-before-charge',
    breaks: 'a single send charged, then kept waiting behind a full pace, instead of a 429 with nothing charged',
    edits: [
      {
        file: 'src/modules/messages/service.ts',
        find: 'if (slot.waitMs === null && !repeat) {',
        replace: 'if (false) {',
      },
    ],
    tests: ['tests/messages/pace.test.ts'],
    filter: 'cannot take within',
  },
  {
    name: 'queued-outcome-event-sent',
    breaks: 'an outcome never told: a send answered queued and later sent gets no message.status event',
    edits: [{ file: HANDOFF, find: 'from sent s where s.announce_outcome', replace: 'from sent s where false' }],
    tests: ['tests/messages/pace.test.ts'],
    filter: 'answered 202 queued',
  },
  {
    name: 'queued-outcome-event-failed',
    breaks: 'an outcome never told: an entry answered queued whose validity ran out is refunded with no message.status event',
    edits: [{ file: LEDGER, find: 'from failed f where f.announce_outcome', replace: 'from failed f where false' }],
    tests: ['tests/messages/pace.test.ts'],
    filter: 'validity runs out',
  },
  {
    name: 'renew-found-charge',
    breaks: 'a message handed over twice: a repeated send that found its charge hands it over again without checking whose it is',
    edits: [
      {
        file: HANDOFF,
        find: 'handOver(message, lease, fresh ? firstWaitMs : null, {\n        checkFirst: !fresh,',
        replace: 'handOver(message, lease, firstWaitMs, {\n        checkFirst: false,',
      },
    ],
    tests: ['tests/messages/idempotency.test.ts'],
    filter: 'died after charging',
  },
  {
    name: 'recovery-claim',
    breaks: 'a charge never handed over nor refunded: nothing takes over the messages of a process that died',
    edits: [
      {
        file: RECOVERY,
        find: "where status = 'queued' and handoff_until < ${now} - make_interval(",
        replace: "where false and status = 'queued' and handoff_until < ${now} - make_interval(",
      },
    ],
    tests: ['tests/messages/bulk-crash.outer.test.ts'],
  },
  {
    name: 'handoff-answer-before-record',
    breaks:
      'an answer naming a SID the books may never hold: sent 2 s into an outage, before its record, which a crash then loses (recovery sends again)',
    edits: [
      {
        file: HANDOFF,
        find: "clock.setTimeout(() => resolve('late'), RECORD_ANSWER_MS)",
        replace: "clock.setTimeout(() => resolve('late'), 2_000)",
      },
    ],
    tests: ['tests/messages/lost-commit.outer.test.ts'],
    filter: 'acceptance and its record',
    database: 'postgres',
  },
  {
    name: 'recovery-after-outage',
    breaks: 'a message handed over twice: after a database outage, recovery takes over a lease its live holder could not renew',
    edits: [
      { file: RECOVERY, find: 'if (deps.clock.now().getTime() - lastError < afterOutageMs(deps)) return 0', replace: 'void lastError' },
    ],
    tests: ['tests/messages/lost-commit.outer.test.ts'],
    filter: 'two leases',
    database: 'postgres',
  },
  {
    name: 'recovery-slow-probe',
    breaks: 'a message handed over twice: an outage that kept recovery waiting (not failing) is not seen as one',
    edits: [
      {
        file: RECOVERY,
        find: 'if (deps.clock.monotonic() - probing > SLOW_PROBE_MS) lastOutageAt.set(deps.sql, deps.clock.now().getTime())',
        replace: 'void probing',
      },
    ],
    tests: ['tests/messages/lost-commit.outer.test.ts'],
    filter: 'two leases',
    database: 'postgres',
  },
  {
    name: 'recovery-quarantine',
    breaks: 'a message sent forever: one whose outcome cannot be recorded is handed over at every recovery',
    edits: [
      {
        file: RECOVERY,
        find: 'where id in (select id from due) and handoff_recoveries >= ${MAX_RECOVERIES}',
        replace: 'where false',
      },
      {
        file: RECOVERY,
        find: 'where id in (select id from due) and handoff_recoveries < ${MAX_RECOVERIES}',
        replace: 'where id in (select id from due)',
      },
    ],
    tests: ['tests/messages/quarantine.test.ts'],
  },
  {
    name: 'single-charge-lookup',
    breaks: 'a single send charged twice (or failing) when its charge runs again with its request token',
    edits: [{ file: LEDGER, find: 'where m.request_token = any(', replace: 'where false and m.request_token = any(' }],
    tests: ['tests/messages/lost-commit.outer.test.ts'],
    filter: 'group-commit charge',
    database: 'postgres',
  },
  {
    name: 'bulk-charge-lookup',
    breaks: 'a bulk charged twice (or failing) when its charge runs again with its request token',
    edits: [{ file: LEDGER, find: 'where m.request_token = ${requestToken}', replace: 'where false' }],
    tests: ['tests/messages/bulk-crash.outer.test.ts'],
  },
  {
    name: 'idempotency-replay',
    breaks: 'a repeat charged again: every request with a used Idempotency-Key runs as a new one',
    edits: [{ file: IDEMPOTENCY, find: 'where k.created_at < ${now} - make_interval(hours => ${IDEMPOTENCY_KEY_TTL_HOURS})', replace: '' }],
    tests: ['tests/messages/idempotency.test.ts'],
    filter: 'twice charges once',
  },
  {
    name: 'idempotency-pending',
    breaks: 'a repeat while the first request still hands its message over runs it again instead of 409',
    edits: [{ file: IDEMPOTENCY, find: 'progress!.pending > 0 || ', replace: '' }],
    tests: ['tests/messages/idempotency.test.ts'],
    filter: 'still handing',
  },
  {
    name: 'idempotency-pending-uncharged',
    breaks: 'a repeat while the first request has not charged yet runs it a second time instead of 409',
    edits: [{ file: IDEMPOTENCY, find: '(progress!.charged === 0 && !existing.stale)', replace: 'false' }],
    tests: ['tests/messages/idempotency.test.ts'],
    filter: 'died before charging',
  },
  {
    name: 'idempotency-unstored-answer',
    breaks: 'two answers to one Idempotency-Key: an answer that could not be stored goes out, and a repeat recovers the request otherwise',
    edits: [
      {
        file: IDEMPOTENCY,
        find: "      throw new ApiError(\n        'SERVICE_UNAVAILABLE',",
        replace: "      return void new ApiError(\n        'SERVICE_UNAVAILABLE',",
      },
    ],
    tests: ['tests/messages/idempotency-store.outer.test.ts'],
    filter: 'cannot be stored',
    database: 'postgres',
  },
  {
    name: 'idempotency-store-found-done',
    breaks:
      'two answers to one Idempotency-Key: a run whose store finds the key done (recovered meanwhile by a repeat) gives its own answer',
    edits: [{ file: IDEMPOTENCY, find: '    if (stored.length > 0) return\n', replace: '    return\n' }],
    tests: ['tests/messages/idempotency-store.outer.test.ts'],
    filter: 'waits to store its answer',
    database: 'postgres',
  },
  {
    name: 'idempotency-conflict-unstored',
    breaks: "a bulk's key stuck on 409: the answer of a request whose messages were still handed over elsewhere is stored and replayed",
    edits: [{ file: IDEMPOTENCY, find: "error instanceof ApiError && error.code !== 'CONFLICT'", replace: 'error instanceof ApiError' }],
    tests: ['tests/messages/idempotency.test.ts'],
    filter: 'not its stored answer',
  },
  {
    name: 'repeat-bulk-linked-user-id',
    breaks:
      "a bulk by user id whose first run died is answered 409 for ever once Meta links a customer's user id to a phone (the repeat no longer finds the entry it charged)",
    edits: [
      {
        file: 'src/modules/messages/bulk.ts',
        find: '(row.phone === m.phone || (isUserId(row.phone) && row.phone === m.givenTo?.trim()))',
        replace: 'row.phone === m.phone',
      },
    ],
    tests: ['tests/inbound/user-id-links.test.ts'],
    filter: 'first run died',
  },
  {
    name: 'repeat-send-charged-recipient',
    breaks:
      'a send by user id whose first run died, repeated after Meta linked the customer, goes on to the phone and answers another `to`',
    edits: [
      {
        file: 'src/modules/messages/service.ts',
        find: 'phone: await chargedRecipient(deps, requestToken)',
        replace: 'phone: (prepared as Prepared).phone',
      },
    ],
    tests: ['tests/inbound/user-id-links.test.ts'],
    filter: 'first run died',
  },
  {
    name: 'refund-lock-order',
    breaks: "a refund and a charge deadlock: a refund of several accounts locks them in another order than a charge's",
    edits: [
      {
        file: LEDGER,
        find: "and status = 'queued')\n      order by id\n      for update",
        replace: "and status = 'queued')\n      for update",
      },
    ],
    tests: ['tests/messages/guards.outer.test.ts'],
    filter: 'refund lock order',
    database: 'postgres',
  },
  {
    name: 'charge-lock-order',
    breaks: "a charge and a refund deadlock: a group-commit charge of several accounts locks them in another order than a refund's",
    edits: [{ file: LEDGER, find: 'order by a.id\n      for update', replace: 'for update' }],
    tests: ['tests/messages/guards.outer.test.ts'],
    filter: 'charge lock order',
    database: 'postgres',
  },
  {
    name: 'spend-cap-key-lock',
    breaks:
      "a key charged past its daily spend cap: concurrent charge statements each count from the key's spend as it was when they began",
    edits: [{ file: LEDGER, find: 'order by k.id\n      for no key update', replace: 'order by k.id' }],
    tests: ['tests/messages/spend-cap-instances.outer.test.ts'],
    filter: 'key row lock',
    database: 'postgres',
  },
  {
    name: 'charge-locked-balance-single',
    breaks:
      "a 500 for a paid send: a group-commit charge that waited for a top-up's lock builds its row from its older snapshot, and the balance check refuses it (23514)",
    edits: [
      {
        file: LEDGER,
        find: 'set balance = s.account_balance - s.total',
        replace: 'set balance = a.balance - s.total',
      },
    ],
    tests: ['tests/messages/debit-race.outer.test.ts'],
    filter: 'single send from a balance of 0: 200, charged',
    database: 'postgres',
  },
  {
    name: 'charge-locked-balance-bulk',
    breaks:
      "a 500 for a paid bulk: its charge that waited for a top-up's lock builds its row from its older snapshot, and the balance check refuses it (23514)",
    edits: [{ file: LEDGER, find: 'set balance = v.balance - v.cost', replace: 'set balance = accounts.balance - v.cost' }],
    tests: ['tests/messages/debit-race.outer.test.ts'],
    filter: 'bulk of 2 from a balance of 1',
    database: 'postgres',
  },
  {
    name: 'parked-report',
    breaks: 'a status lost: a report that arrives before its SID is stored is dropped instead of parked',
    edits: [
      {
        file: RECEIVER,
        find: "reports.filter((r) => !known.has(r.sid) && (r.status !== 'sent' || reportedCategory(r.pricing) !== null))",
        replace: 'reports.filter(() => false)',
      },
    ],
    tests: ['tests/status/parked-reports.test.ts'],
    filter: 'parked, then applied',
  },
  {
    name: 'parked-worker',
    breaks: 'a status lost: a parked report is never applied once its SID is stored',
    edits: [{ file: RECEIVER, find: 'if (!found!.due) return', replace: 'return' }],
    tests: ['tests/status/parked-reports.test.ts'],
    filter: 'parked, then applied',
  },
  {
    name: 'parked-before-newer',
    breaks: 'a status lost: the parked reports taken by a newer report of the same SID are not applied',
    edits: [{ file: RECEIVER, find: 'parked.filter((p) => p.live)', replace: 'parked.filter(() => false)' }],
    tests: ['tests/status/parked-reports.test.ts'],
    filter: 'applies the parked ones first',
  },
  {
    name: 'simulator-report-order',
    breaks:
      "an event lost: a read claimed while its delivered is another instance's applies first, and the delivered event is never written",
    edits: [{ file: 'src/workers/simulator-reports.ts', find: 'and e.id not in (select id from batch)', replace: 'and false' }],
    tests: ['tests/status/simulator-order.test.ts'],
    filter: 'simulator report order',
    database: 'postgres',
  },
  {
    name: 'status-forward-only',
    breaks: 'an event twice: a repeated delivered report changes the message again and emits a second event',
    edits: [
      {
        file: 'src/modules/status/machine.ts',
        find: "(m.status = 'delivered' and r.next in ('read', 'failed'))",
        replace: "(m.status = 'delivered' and r.next in ('delivered', 'read', 'failed'))",
      },
    ],
    tests: ['tests/status/state-machine.test.ts'],
    filter: 'delivered \\+ delivered',
  },
  {
    name: 'late-refund-once',
    breaks: 'a refund twice: a failure reported after acceptance refunds a message that was refunded already',
    edits: [
      {
        file: LEDGER,
        find: '(${sql(m)}.refunded_at is null and ${sql(m)}.refund_late_failure)',
        replace: '(${sql(m)}.refund_late_failure)',
      },
    ],
    tests: [LATE],
    filter: 'never refunded again',
  },
  {
    name: 'late-refund-marked',
    breaks: 'a late failure refunded but not marked refunded: the message and its event say it still cost its price',
    edits: [
      {
        file: MACHINE,
        find: 'refunded_at = case when t.refund then ${now} else m.refunded_at end',
        replace: 'refunded_at = m.refunded_at',
      },
    ],
    tests: [LATE],
    filter: 'delivered, then failed',
  },
  {
    name: 'late-refund-choice-at-charge',
    breaks: "a late failure refunded or kept charged by a price's choice made after the message was charged",
    edits: [
      {
        file: LEDGER,
        find: '(${sql(m)}.refunded_at is null and ${sql(m)}.refund_late_failure)',
        replace: '(${sql(m)}.refunded_at is null and account_refunds_late_failures(${sql(m)}.account_id))',
      },
    ],
    tests: [LATE],
    filter: 'charged under applies',
  },
  {
    name: 'late-refund-choice-single',
    breaks: 'a single send refunded when it fails late, though its price keeps late failures charged',
    edits: [{ file: LEDGER, find: 'refund_late, request_token, 1,', replace: 'true, request_token, 1,' }],
    tests: [LATE],
    filter: 'stay charged when they fail',
  },
  {
    name: 'late-refund-choice-bulk',
    breaks: "a bulk's messages refunded when they fail late, though their price keeps late failures charged",
    edits: [{ file: LEDGER, find: 'debit.refund_late, ${requestToken}', replace: 'true, ${requestToken}' }],
    tests: [LATE],
    filter: 'stay charged when they fail',
  },
  {
    name: 'late-refund-choice-campaign',
    breaks: "a campaign's messages refunded when they fail late, though their price keeps late failures charged",
    edits: [
      {
        file: 'src/modules/campaigns/engine.ts',
        find: "'queued', ${account.cost}, ${account.refundLateFailure},",
        replace: "'queued', ${account.cost}, true,",
      },
    ],
    tests: [LATE],
    filter: 'stay charged when they fail',
  },
  {
    name: 'late-refund-lock-order',
    breaks: "a late failure's refund and a charge deadlock: the refund locks several accounts in another order than a charge's",
    edits: [
      {
        file: LEDGER,
        find: 'where id in (select account_id from ${sql(source)} where refund or diff <> 0)\n    order by id for update',
        replace: 'where id in (select account_id from ${sql(source)} where refund or diff <> 0)\n    for update',
      },
    ],
    tests: ['tests/messages/guards.outer.test.ts'],
    filter: 'late refund lock order',
    database: 'postgres',
  },
  {
    name: 'settle-once',
    breaks: "a settlement twice: a repeated or late pricing report moves a message's money again after it was settled",
    edits: [
      {
        file: MACHINE,
        find: "r.reported is not null and m.settled_at is null and m.status in ('sent', 'delivered', 'read') as settles",
        replace: "r.reported is not null and m.status in ('sent', 'delivered', 'read') as settles",
      },
    ],
    tests: [PRICES],
    filter: 'once, however often',
  },
  {
    name: 'settle-down-trusted',
    breaks:
      "a tenant holding its own Meta sender's app secret signs pricing reports that settle its messages down (free, a cheaper category): its charges shrink on its own word",
    edits: [
      {
        file: LEDGER,
        find: '>= ${sql(m)}.cost or ${trustedSender(sql, m)}))',
        replace: '>= ${sql(m)}.cost or true))',
      },
    ],
    tests: [PRICES],
    filter: "tenant's own sender",
  },
  {
    name: 'settle-parked-sent',
    breaks:
      "Meta's priced `sent` that arrives before the message's SID is stored is dropped, not parked: its settlement is lost (found by the fault test)",
    edits: [
      {
        file: 'src/modules/status/receiver.ts',
        find: "(r.status !== 'sent' || reportedCategory(r.pricing) !== null)",
        replace: "r.status !== 'sent'",
      },
    ],
    tests: [PRICES],
    filter: 'parked before the SID',
  },
  {
    name: 'media-id-tenant',
    breaks:
      "a send names another account's uploaded file by its media_id and sends it: one tenant's files (an invoice) reach another's customers",
    edits: [
      {
        file: 'src/modules/media/service.ts',
        find: 'from media where account_id = ${accountId} and id = any(${wanted}::text[])',
        replace: 'from media where id = any(${wanted}::text[])',
      },
    ],
    tests: ['tests/media/upload.test.ts'],
    filter: "another tenant's media_id",
  },
  {
    name: 'recovery-live-holder',
    breaks: 'a message is sent twice: recovery takes over a lease its own live process holds, once a stall let the lease run out',
    edits: [
      {
        file: 'src/workers/handoff-recovery.ts',
        find: 'and coalesce(handoff_token <> all(${deps.handoff.heldTokens()}::uuid[]), true)',
        replace: 'and true',
      },
    ],
    tests: ['tests/messages/recovery-live-holder.test.ts'],
  },
  {
    name: 'campaign-media-id-tenant',
    breaks: "a campaign's header names another account's uploaded file and sends it to every recipient of the campaign",
    edits: [
      { file: 'src/modules/campaigns/service.ts', find: 'if (isMedia(media) && media.media_id !== undefined) {', replace: 'if (false) {' },
    ],
    tests: ['tests/templates/campaigns.test.ts'],
    filter: 'takes an uploaded file by media_id',
  },
  {
    name: 'media-kept-for-campaign',
    breaks: "a campaign's header file is deleted (by its owner or by retention) before the campaign sends it: each message then fails",
    edits: [
      {
        file: 'src/modules/media/service.ts',
        find: "c.status in ('draft', 'scheduled', 'sending', 'paused')",
        replace: "c.status in ('cancelled')",
      },
    ],
    tests: ['tests/media/lifetime.test.ts'],
    filter: "a campaign's header file stays",
  },
  {
    name: 'media-delete-tenant',
    breaks: "DELETE /api/v1/media/{id} with another account's file id deletes it: one tenant removes another's files, failing its sends",
    edits: [
      {
        file: 'src/modules/media/service.ts',
        find: 'with target as (select id from media where id = ${id} and account_id = ${accountId}),',
        replace: 'with target as (select id from media where id = ${id}),',
      },
    ],
    tests: ['tests/media/lifetime.test.ts'],
    filter: "another account's id",
  },
  {
    name: 'settle-never-below-zero',
    breaks: 'an upward settlement takes more than the balance has (the statement fails on balance >= 0 and the status is lost)',
    edits: [
      {
        file: LEDGER,
        find: 'least(a.balance + coalesce(c.total, 0), u.asked) - least(a.balance + coalesce(c.total, 0), u.asked - u.diff) as taken',
        replace: 'u.diff as taken',
      },
    ],
    tests: [PRICES],
    filter: 'balance too small',
  },
  {
    name: 'category-price',
    breaks: "a single send of a template is charged cost_per_message instead of its category's price",
    edits: [
      {
        file: LEDGER,
        find: 'cross join lateral (select account_category_price(f.account_id, f.category) as cost) p',
        replace: 'cross join lateral (select account_price(f.account_id) as cost) p',
      },
    ],
    tests: [PRICES],
    filter: 'each category is charged its own price',
  },
  {
    name: 'category-price-bulk',
    breaks: "a bulk's template entries are charged cost_per_message instead of their category's price",
    edits: [
      {
        file: LEDGER,
        find: 'select ord, category, max_price, account_category_price(${owner.accountId}, category) as cost',
        replace: 'select ord, category, max_price, account_price(${owner.accountId}) as cost',
      },
    ],
    tests: [PRICES],
    filter: 'each category is charged its own price',
  },
  {
    name: 'data-dir-lock',
    breaks: "two processes on one embedded database: a second start takes a live holder's DATA_DIR lock",
    edits: [
      {
        file: 'src/db/lock.ts',
        find: 'if (!isStale(holder)) throw new DataDirLockedError(heldMessage(dir, file, holder))',
        replace: '',
      },
    ],
    tests: ['tests/db/lock.outer.test.ts'],
    filter: 'second process refuses',
    database: 'embedded',
  },
  {
    name: 'webhook-record-lease',
    breaks: 'a delivery recorded by a worker whose lease ran out, over the attempt of the one that took it over',
    edits: [{ file: DELIVERY, find: 'e.lease_token = o.token and e.lease_until >= ${now} and ', replace: '' }],
    tests: ['tests/webhooks/delivery.test.ts'],
    filter: 'lease expired is not recorded',
  },
  {
    name: 'webhook-claim-lease',
    breaks: 'an event sent twice at once: a worker claims an event whose lease another worker holds',
    edits: [{ file: DELIVERY, find: 'and (e.lease_until is null or e.lease_until < ${now})', replace: '' }],
    tests: ['tests/webhooks/delivery.test.ts'],
    filter: 'live lease is not claimed',
  },
  {
    name: 'key-rate-position',
    breaks: "a key's requests over its rate let through: each request of a group counted as the group's last",
    edits: [{ file: 'src/http/auth.ts', find: 'position: row.used - row.counted + nth', replace: 'position: row.used' }],
    tests: ['tests/http/rate-limit.test.ts'],
    filter: 'exact under concurrency',
  },
  {
    name: 'sender-disabled-refused',
    breaks: 'a disabled sender still sends: a send, a bulk entry or a campaign from it is charged and handed over',
    edits: [{ file: SENDERS, find: '      if (chosen!.disabled) {', replace: '      if (false as boolean) {' }],
    tests: [SENDER_SENDS],
    filter: 'refuses new sends before charging',
  },
  {
    name: 'sender-foreign-refused',
    breaks: "a `from` that is not one of the account's senders is charged and sent from the account's default instead of refused",
    edits: [
      {
        file: SENDERS,
        find: 'chosen = rows.find((r) => String(r.id) === named || r.number === named)',
        replace: 'chosen = rows.find((r) => String(r.id) === named || r.number === named) ?? rows.find((r) => r.is_default)',
      },
    ],
    tests: [SENDER_SENDS],
    filter: 'not the account',
  },
  {
    name: 'twilio-callback-env-token',
    breaks: "a status callback naming a stored sender's AccountSid verified with TWILIO_AUTH_TOKEN (another account's token)",
    edits: [
      {
        file: 'src/providers/twilio/callback.ts',
        find: "const environmentMay = environment.authToken !== '' && (stored.length === 0 || environment.accountSid === accountSid)",
        replace: "const environmentMay = environment.authToken !== ''",
      },
    ],
    tests: [SENDER_CALLBACKS],
    filter: 'B.s token',
  },
  {
    name: 'twilio-callback-sender-token',
    breaks: "a status callback naming sender A's AccountSid verified with sender B's auth token",
    edits: [
      {
        file: 'src/providers/twilio/callback.ts',
        find: 'const stored = accountSid ? await context.senders(accountSid) : []',
        replace: 'const stored = await context.senders(null)',
      },
    ],
    tests: [SENDER_CALLBACKS],
    filter: 'B.s token',
  },
  {
    name: 'callback-body-cap',
    breaks:
      'an unsigned provider callback read up to the API limit (35.5 MiB) before its signature is checked: four 35 MB bodies to each route take gigabytes and stall /healthz',
    edits: [
      {
        file: 'src/http/body.ts',
        find: 'export const MAX_CALLBACK_BODY_BYTES = 4 * 1024 * 1024',
        replace: 'export const MAX_CALLBACK_BODY_BYTES = MAX_BODY_BYTES',
      },
    ],
    tests: ['tests/http/callback-bodies.outer.test.ts'],
    filter: '35 MB',
  },
  {
    name: 'window-send',
    breaks: "a free-form send outside the customer's 24-hour window charged, then refused by the provider (131047, 63016)",
    edits: [{ file: ADMISSION, find: 'if (checksWindow(config, p.sender) && freeForm(p) && !f.open)', replace: 'if (false)' }],
    tests: [WINDOW_TESTS],
    filter: 'outside the window: 422',
  },
  {
    name: 'window-bulk',
    breaks: 'a bulk entry outside its 24-hour window charged, then refused by the provider',
    edits: [{ file: ADMISSION, find: 'if (checksWindow(config, p.sender) && freeForm(p) && !f.open)', replace: 'if (false)' }],
    tests: [WINDOW_TESTS],
    filter: 'bulk: an entry outside',
  },
  {
    name: 'window-campaign',
    breaks: 'a free-form campaign charges the recipients outside their 24-hour window, whom the provider refuses',
    edits: [
      {
        file: 'src/modules/campaigns/engine.ts',
        find: 'await closedWindowsOf(tx, windowChecked && campaign.ref === null && !wa,',
        replace: 'await closedWindowsOf(tx, false,',
      },
    ],
    tests: [WINDOW_TESTS],
    filter: 'free-form campaign skips',
  },
  {
    name: 'meta-webhook-env-secret',
    breaks: "a webhook naming a stored sender's phone_number_id verified with META_APP_SECRET (another app's secret)",
    edits: [
      {
        file: 'src/providers/meta/webhook.ts',
        find: 'return signer.defaultNumber && environment.phoneNumberId === phoneId ? null : undefined',
        replace: 'return signer.defaultNumber ? null : undefined',
      },
    ],
    tests: [SENDER_CALLBACKS],
    filter: 'other sender.s app secret',
  },
  {
    name: 'meta-webhook-sender-secret',
    breaks: "a webhook naming sender A's phone_number_id verified with sender B's app secret",
    edits: [
      {
        file: 'src/providers/meta/webhook.ts',
        find: 'const stored = signer.senders.find((s) => s.settings.phoneNumberId === phoneId)',
        replace: 'const stored = signer.senders[0]',
      },
    ],
    tests: [SENDER_CALLBACKS],
    filter: 'other sender.s app secret',
  },
  {
    name: 'rotation-compare-and-set',
    breaks: "a sender's credentials changed while a rotation runs are overwritten by the rotation with what it read before",
    edits: [
      {
        file: SENDER_SERVICE,
        find: 'where id = ${row.id} and credentials = ${row.credentials} returning id',
        replace: 'where id = ${row.id} returning id',
      },
    ],
    tests: ['tests/senders/rotation-race.test.ts'],
  },
  {
    name: 'seal-context-per-sender',
    breaks:
      "sender A's sealed credentials copied onto sender B's row open as B's: B's messages go out as A, A's app secret verifies B's callbacks",
    edits: [
      {
        file: SENDER_SERVICE,
        find: 'export const sealContext = (id: number) => `sender:${id}`',
        replace: "export const sealContext = (_id: number) => 'sender'",
      },
    ],
    tests: ['tests/senders/seal-context.test.ts'],
  },
  {
    name: 'balance-low-once',
    breaks: 'balance.low sent on every debit below the threshold, not once per crossing',
    edits: [
      {
        file: LEDGER,
        find: 'where threshold is not null and balance_before >= threshold and balance_after < threshold',
        replace: 'where threshold is not null and balance_after < threshold',
      },
    ],
    tests: [EVENTS],
    filter: 'once per crossing',
  },
  {
    name: 'account-event-choice',
    breaks: 'an account event (message.received, balance.low) delivered to registrations that did not choose it',
    edits: [
      {
        file: 'src/modules/webhooks/events.ts',
        find: 'where (w.api_key_id is not null and s.event = any(w.events))',
        replace: 'where (w.api_key_id is not null)',
      },
    ],
    tests: [EVENTS],
    filter: 'one registered for message.status only gets nothing',
  },
  {
    name: 'messaging-limit-room',
    breaks: 'a business-initiated message past its budget goes and is charged: a new recipient is counted with no room left',
    edits: [{ file: LIMIT_TAKE, find: 'r.counted or r.new_rank <= tier - used as alone', replace: 'true as alone' }],
    tests: [LIMIT_TESTS],
    filter: 'past the budget|bulk of 251|two senders in one portfolio',
  },
  {
    name: 'messaging-limit-refused-settle',
    breaks:
      'a send refused at its charge (its balance) keeps the messaging-limit use it held: the budget counts a recipient nothing was sent to',
    edits: [{ file: LIMIT_GUARD, find: "if (result === null || 'refused' in result) await settle()", replace: '' }],
    tests: [LIMIT_TESTS],
    filter: 'refused for its balance',
  },
  {
    name: 'messaging-limit-left-out-released',
    breaks:
      'a bulk entry its charge left out (its price rose above its max_price, its template was paused) keeps its held use: the budget counts a recipient nothing was sent to for 24 hours',
    edits: [{ file: LIMIT_GUARD, find: 'if (!held || phones.length === 0) return', replace: 'return' }],
    tests: [LIMIT_TESTS],
    filter: 'leaves out',
  },
  {
    name: 'messaging-limit-expired-hold-kept',
    breaks: "a charged send's held use is dropped when its hold runs out: its recipient stops counting and the budget is passed",
    edits: [
      {
        file: LIMIT_TAKE,
        find: 'from expired e where u.id = e.id and exists (select 1 from messages m where m.request_token = e.request_token)',
        replace: 'from expired e where u.id = e.id and false',
      },
    ],
    tests: [LIMIT_TESTS],
    filter: 'died before charging',
  },
  {
    name: 'messaging-limit-send',
    breaks: 'a single send past its budget is charged and handed over instead of refused with 429 MESSAGING_LIMIT',
    edits: [
      {
        file: 'src/modules/messages/service.ts',
        find: 'if (limit.refused.length > 0) throw limit.refused[0]!.error',
        replace: '',
      },
    ],
    tests: [LIMIT_TESTS],
    filter: 'past the budget',
  },
  {
    name: 'messaging-limit-bulk',
    breaks: 'bulk entries past their budget are charged and handed over along with the rest',
    edits: [{ file: 'src/modules/messages/bulk.ts', find: 'valid = limit.fit', replace: '' }],
    tests: [LIMIT_TESTS],
    filter: 'bulk of 251',
  },
  {
    name: 'messaging-limit-campaign',
    breaks: "a campaign sends past its sender's budget instead of pausing with MESSAGING_LIMIT",
    edits: [
      {
        file: 'src/modules/campaigns/engine.ts',
        find: 'const batch = sendable.slice(0, limited.fits)',
        replace: 'const batch = sendable.slice(0, affordable)',
      },
    ],
    tests: [LIMIT_TESTS],
    filter: 'starts with what fits',
  },
  {
    name: 'messaging-limit-lock',
    breaks: "two instances both count the budget's last room and both send: the budget is passed",
    edits: [
      {
        file: LIMIT_TAKE,
        find: 'perform 1 from messaging_budgets b where b.budget = budget_key for update;',
        replace: 'perform 1 from messaging_budgets b where b.budget = budget_key;',
      },
    ],
    tests: ['tests/budgets/instances.test.ts'],
    database: 'postgres',
  },
  {
    name: 'opted-out-send-refused',
    breaks: 'a send to a phone that opted out of the account is charged and handed over instead of refused with RECIPIENT_OPTED_OUT',
    edits: [
      {
        file: ADMISSION,
        find: '  if (f.optedOut) return optedOutError(p.phone)\n',
        replace: '',
      },
    ],
    tests: [OPT_OUTS],
    filter: "STOP through Meta's webhook",
  },
  {
    name: 'opted-out-bulk-entry-refused',
    breaks: 'a bulk entry to a phone that opted out is charged and handed over instead of failing alone, uncharged',
    edits: [{ file: ADMISSION, find: '  if (f.optedOut) return optedOutError(p.phone)\n', replace: '' }],
    tests: [OPT_OUTS],
    filter: 'bulk: the opted-out entry',
  },
  {
    name: 'opted-out-campaign-skipped',
    breaks: 'a campaign charges and sends to recipients who opted out (before or while it runs) instead of skipping and counting them',
    edits: [
      {
        file: 'src/modules/campaigns/engine.ts',
        find: 'const reachable = fetched.filter((c) => !optedOut.has(c.phone))',
        replace: 'const reachable = fetched',
      },
    ],
    tests: ['tests/optouts/campaign.test.ts'],
  },
  {
    name: 'optout-account-lock',
    breaks:
      'two opt-outs of one phone at once both find it not opted out: the later to record it fails with 500 instead of finding it done',
    edits: [optOutUnlocked],
    tests: [OPT_OUT_RACES],
    filter: 'two opt-outs of one phone at once',
    database: 'postgres',
  },
  {
    // A campaign batch locks its account FOR UPDATE, which the opt-out's foreign keys wait for too: the
    // opt-out's own lock is what holds once the batch takes the account as a balance update does.
    name: 'optout-account-lock-campaign',
    breaks:
      'an opt-out answered while a campaign batch that read the opt-outs before it is still to commit: the batch then charges and sends to the phone',
    edits: [
      optOutUnlocked,
      {
        file: LEDGER,
        find: 'where id = ${accountId} for update of accounts`',
        replace: 'where id = ${accountId} for no key update of accounts`',
      },
    ],
    tests: [OPT_OUT_RACES],
    filter: 'campaign batch to its phone is being charged',
    database: 'postgres',
  },
  {
    name: 'handoff-optout-check',
    breaks:
      'a message charged before its recipient opted out is handed over anyway once its pace slot or throttle retry comes, ' +
      'instead of failing RECIPIENT_OPTED_OUT, refunded',
    edits: [{ file: HANDOFF, find: "if (claim === 'opted_out') {", replace: 'if (false) {' }],
    tests: ['tests/optouts/handoff.test.ts'],
  },
  {
    name: 'rich-provider-kind',
    breaks: 'a rich message charged for a sender whose provider cannot send its type (refused by it, or sent as it is not)',
    edits: [{ file: RICH, find: 'if (!provider.rich?.has(kind)) {', replace: 'if (false) {' }],
    tests: ['tests/messages/rich.test.ts'],
    filter: 'cannot send',
  },
  {
    name: 'rich-provider-limits',
    breaks: "a rich message charged past a limit of the sender's own provider (Twilio's document file names, button ids, list rows)",
    edits: [{ file: RICH, find: 'const problem = provider.richProblem?.(content)', replace: 'const problem = null' }],
    tests: ['tests/providers/rich-twilio.test.ts'],
    filter: 'own limits',
  },
  {
    name: 'rich-button-count',
    breaks: "reply buttons past WhatsApp's 3 (or none) charged, then refused by the provider (131009)",
    edits: [{ file: RICH, find: 'if (given.length < 1 || given.length > LIMITS.buttons) {', replace: 'if (false) {' }],
    tests: ['tests/messages/rich.test.ts'],
    filter: 'buttons: 422',
  },
  {
    name: 'rich-header-bound',
    breaks: 'header media charged with a template that goes as plain text (its media silently dropped)',
    edits: [{ file: ADMISSION, find: 'if (header && !bound) {', replace: 'if (false) {' }],
    tests: ['tests/messages/rich.test.ts'],
    filter: 'not bound',
  },
  {
    name: 'twilio-header-media-prefix',
    breaks:
      "a Twilio template's header link outside the media URL it was approved with charged, then sent as another file " +
      "(the template's prefix glued to the link's tail)",
    edits: [
      {
        file: 'src/modules/templates/fill.ts',
        find: 'if (!link.startsWith(prefix) || !link.endsWith(suffix) || link.length <= prefix.length + suffix.length) {',
        replace: 'if (!link.endsWith(suffix) || link.length <= prefix.length + suffix.length) {',
      },
    ],
    tests: ['tests/templates/twilio-media.test.ts'],
    filter: 'a link elsewhere',
  },
  {
    name: 'media-claim-lease',
    breaks: 'an inbound medium being fetched claimed again by another worker: fetched twice from the provider',
    edits: [
      {
        file: 'src/modules/inbound/media.ts',
        find: "where status = 'pending' and run_at <= ${now} and attempts < ${MEDIA_MAX_ATTEMPTS}",
        replace: "where status = 'pending' and attempts < ${MEDIA_MAX_ATTEMPTS}",
      },
    ],
    tests: ['tests/inbound/media.test.ts'],
    filter: 'exactly once',
  },
  {
    name: 'media-account-scope',
    breaks: "an inbound message's medium served to another account's API key",
    edits: [
      {
        file: 'src/modules/inbound/media-view.ts',
        find: 'where i.id = ${inboundId} and (${accountId}::bigint is null or i.account_id = ${accountId})',
        replace: 'where i.id = ${inboundId}',
      },
    ],
    tests: ['tests/inbound/media.test.ts'],
    filter: 'another account.s key',
  },
  {
    name: 'media-size-cap',
    breaks: 'an inbound medium without a Content-Length read and kept past MEDIA_MAX_BYTES',
    edits: [{ file: 'src/modules/inbound/media.ts', find: '      if (size > limit) {', replace: '      if (size < 0) {' }],
    tests: ['tests/inbound/media.test.ts'],
    filter: 'MEDIA_MAX_BYTES',
  },
  {
    name: 'media-magic-bytes',
    breaks: 'an inbound medium whose first bytes are not of its claimed type (HTML as image/png) kept and served as that type',
    edits: [{ file: 'src/modules/inbound/media.ts', find: 'if (check && !check(bytes))', replace: 'if (check && false)' }],
    tests: ['tests/inbound/media.test.ts'],
    filter: 'first bytes not of the type',
  },
  {
    name: 'replica-own-write',
    breaks: "a caller's list read from a lagging replica that has not replayed the caller's own last write (a message just sent missing)",
    edits: [
      {
        file: 'src/db/replica.ts',
        find: '        if (!row?.caught_up) return primary',
        replace: '        if (row === undefined) return primary',
      },
    ],
    tests: ['tests/db/replica.outer.test.ts'],
    database: 'postgres',
  },
  {
    name: 'campaign-recipient-once',
    breaks: 'a campaign contact sent a second message when the first is in an earlier monthly partition',
    edits: [{ file: 'src/modules/campaigns/engine.ts', find: 'from v join recipient using (contact_id)', replace: 'from v' }],
    tests: ['tests/db/partitions.test.ts'],
    filter: 'campaign run again',
  },
  {
    name: 'inbound-key-once',
    breaks: "a provider's repeat delivery of an inbound message stored again when the first copy is in another month",
    edits: [
      {
        file: 'src/modules/inbound/service.ts',
        find: 'insert into inbound_message_keys (provider, provider_message_id) values (${storedAs}, ${providerId})\n          on conflict do nothing\n          returning 1',
        replace: 'select 1',
      },
    ],
    tests: ['tests/db/partitions.test.ts'],
    filter: 'repeat delivery of an inbound message',
  },
  {
    name: 'charge-twin-same-month',
    breaks:
      "a charge's twin racing it (same request token, first run uncommitted) charged again: their created_at differ, so the month's unique index does not meet them",
    edits: [{ file: LEDGER, find: "if (token[14] !== '7') return null", replace: 'return null' }],
    tests: ['tests/db/charge-twin.outer.test.ts'],
    filter: 'twin racing it',
    database: 'postgres',
  },
  {
    name: 'callback-report-owner',
    breaks: "a status report signed with tenant B's own credentials changes (fails, refunds) a message another sender sent",
    edits: [
      { file: MACHINE, find: 'r.owners is null or coalesce(m.sender_id, 0) = any(r.owners::bigint[]) as owned', replace: 'true as owned' },
    ],
    tests: [TENANTS],
    filter: 'status report signed with one tenant',
  },
  {
    name: 'parked-report-owner',
    breaks: 'a forged report parked before its SID was stored is applied later to the message another sender sent',
    edits: [{ file: RECEIVER, find: 'senders: ownersOf(r.signer_senders),', replace: 'senders: undefined,' }],
    tests: [TENANTS],
    filter: 'parked before its SID',
  },
  {
    name: 'meta-change-without-number',
    breaks: "a Meta change naming no phone_number_id falls to the deployment's number: any app's secret opts out another tenant's customer",
    edits: [
      {
        file: 'src/providers/meta/webhook.ts',
        find: "if (typeof phoneId !== 'string' || phoneId === '') return undefined",
        replace: "if (typeof phoneId !== 'string' || phoneId === '') return null",
      },
    ],
    tests: [TENANTS],
    filter: 'one without metadata',
  },
  {
    name: 'twilio-inbound-number-owned',
    breaks: "an inbound message signed with a stored sender's token lands on the deployment's number (another tenant's inbox and opt-outs)",
    edits: [
      {
        file: 'src/providers/twilio/inbound.ts',
        find: "return signer.defaultNumber && (environmentFrom === '' || withoutChannel(environmentFrom) === to) ? null : undefined",
        replace: 'return null',
      },
    ],
    tests: [TENANTS],
    filter: 'To the deployment.s number',
  },
  {
    name: 'shared-number-first-holder',
    breaks:
      "on a shared number the latest account to send takes the conversation: one message steals another tenant's replies and opt-outs",
    edits: [
      {
        file: 'src/modules/inbound/service.ts',
        find: 'order by m.created_at, m.id limit 1',
        replace: 'order by m.created_at desc, m.id desc limit 1',
      },
    ],
    tests: [TENANTS],
    filter: 'does not take the conversation',
  },
  {
    name: 'quoted-reply-same-number',
    breaks: "a reply on the shared number quoting a message of another number is given to that message's account",
    edits: [
      {
        file: 'src/modules/inbound/service.ts',
        find: 'where m.message_sid = ${replyTo} and m.sender_id is not distinct from ${senderId} and',
        replace: 'where m.message_sid = ${replyTo} and',
      },
    ],
    tests: [TENANTS],
    filter: 'quoting a message of another number',
  },
  {
    name: 'late-failure-sender-trust',
    breaks: "a tenant holding its sender's credentials signs `failed` for its own delivered messages and is refunded",
    edits: [
      {
        file: LEDGER,
        find: "exists (select 1 from senders s where s.id = ${sql(m)}.sender_id and s.late_failures = 'refund')",
        replace: 'true',
      },
    ],
    tests: [TENANTS],
    filter: 'keeps them charged by default',
  },
  {
    name: 'media-error-redaction',
    breaks:
      "Meta's media lookup refusal kept as Meta wrote it: the access token it quotes lands in inbound_media.error and the tenant's media_error",
    edits: [{ file: 'src/providers/meta/media.ts', find: 'reason: providerText(reason, metaSecrets(settings))!', replace: 'reason' }],
    tests: ['tests/providers/redaction.test.ts'],
    filter: 'media lookup',
  },
  {
    name: 'provider-text-secrets',
    breaks:
      "a provider's text keeps the credentials the service called it with: a Twilio auth token quoted in a refusal reaches the 502 answer, error_message and a sender's check",
    edits: [
      {
        file: 'src/providers/http.ts',
        find: 'for (const form of [...forms].sort((a, b) => b.length - a.length)) out = out.split(form).join(REDACTED)',
        replace: 'void forms',
      },
    ],
    tests: ['tests/providers/redaction.test.ts'],
    filter: 'send refused|check',
  },
  {
    name: 'provider-text-shapes',
    breaks:
      "a credential the service does not hold at that moment kept as it came: a Meta status webhook's error text quoting access_token=… reaches error_message and the message.status event",
    edits: [
      {
        file: 'src/providers/http.ts',
        find: 'for (const [shape, replace] of CREDENTIAL_SHAPES) out = out.replace(shape, replace)',
        replace: 'void CREDENTIAL_SHAPES',
      },
    ],
    tests: ['tests/providers/redaction.test.ts'],
    filter: 'status callback',
  },
  {
    name: 'template-account-owner',
    breaks:
      "a Meta template change naming a WhatsApp Business Account of none of its signer's senders changes the signer's templates of that name",
    edits: [
      {
        file: META_WEBHOOK,
        find: 'signer.senders.filter((s) => s.settings.businessAccountId === id)',
        replace: 'signer.senders.filter(() => id !== null)',
      },
    ],
    tests: [TEMPLATE_WEBHOOKS],
    filter: 'tenants',
  },
  {
    name: 'template-default-signer',
    breaks: "a tenant's own app secret changes the deployment's templates (a change naming META_BUSINESS_ACCOUNT_ID)",
    edits: [
      {
        file: META_WEBHOOK,
        find: 'if (signer.defaultNumber && environment.businessAccountId === id) owners.push(null)',
        replace: 'if (environment.businessAccountId === id) owners.push(null)',
      },
    ],
    tests: [TEMPLATE_WEBHOOKS],
    filter: 'tenants',
  },
  {
    name: 'template-meta-order',
    breaks:
      "Meta's template notifications applied in the order they arrive: an older one delivered late undoes a newer one, a repeated FLAGGED is recorded twice",
    edits: [{ file: TEMPLATE_NOTICES, find: 'if (notice.at && latest && (', replace: 'if (false && notice.at && latest && (' }],
    tests: [TEMPLATE_WEBHOOKS],
    filter: 'status|quality',
  },
  {
    name: 'template-meta-order-unchanged',
    breaks:
      "a Meta template notification that changed nothing keeps no time: an older one delivered after it undoes Meta's newer word (APPROVED, then a late PAUSED, leaves it paused)",
    edits: [
      {
        file: TEMPLATE_NOTICES,
        find: "if (result && notice.at && field !== 'flagged'",
        replace: "if (false && result && notice.at && field !== 'flagged'",
      },
    ],
    tests: [TEMPLATE_WEBHOOKS],
    filter: 'changed nothing still counts',
  },
  {
    name: 'template-charge-status',
    breaks:
      "a single send's WhatsApp template paused by Meta's webhook between the send's check and its charge is charged, handed to Meta and refused there (132015), refunded",
    edits: [
      {
        file: 'src/modules/ledger/service.ts',
        find: "where i.ord not in (select ord from existing) and w.status <> 'approved'",
        replace: 'where i.ord not in (select ord from existing) and false',
      },
    ],
    tests: ['tests/templates/status-race.test.ts'],
    filter: 'between the check and the charge',
  },
  {
    name: 'template-charge-status-bulk',
    breaks:
      "a bulk's entries of a WhatsApp template paused by Meta's webhook after the bulk's checks are charged, handed to Meta and refused there (132015), refunded",
    edits: [
      {
        file: 'src/modules/ledger/service.ts',
        find: "case when exists (select 1 from unapproved) then 'template'",
        replace: "case when false then 'template'",
      },
    ],
    tests: ['tests/templates/status-race.test.ts'],
    filter: 'paused after the checks',
  },
  {
    name: 'template-recovery-status',
    breaks:
      'a send whose first run charged a WhatsApp template, repeated with its Idempotency-Key after the template was paused, answers 422 "not approved, nothing was charged" for a message charged and sent',
    edits: [
      {
        file: 'src/modules/messages/admission.ts',
        find: '  requireSenderOf(t, sender.id, at)\n',
        replace: '  requireSenderOf(t, sender.id, at)\n  requireApproved(t, at)\n',
      },
    ],
    tests: ['tests/templates/status-race.test.ts'],
    filter: 'first run charged',
  },
  {
    name: 'template-sync-older-listing',
    breaks:
      "a WhatsApp template paused by Meta's webhook while a sync's older listing was on its way is approved again by the sync: its sends are charged, refused by Meta (132015) and refunded",
    edits: [
      {
        file: 'src/modules/templates/submission.ts',
        find: "if (!madeSince && !newer.has('status')) Object.assign",
        replace: 'if (true) Object.assign',
      },
    ],
    tests: ['tests/templates/sync-race.test.ts'],
    filter: 'leaves it paused',
  },
  {
    name: 'template-sync-gone-newer',
    breaks: "a WhatsApp template submitted while a sync's listing (read before it) was on its way is marked deleted by the sync",
    edits: [
      {
        file: 'src/modules/templates/submission.ts',
        find: "if (newer.has('created') || newer.has('status')) return false",
        replace: 'if (false) return false',
      },
    ],
    tests: ['tests/templates/sync-race.test.ts'],
    filter: 'not taken for deleted',
  },
  {
    name: 'template-name-held',
    breaks:
      'a new template with the name and language of one deleted here less than 30 days ago is sent to Meta, which refuses it, instead of a 409 that says why before asking',
    edits: [{ file: 'src/modules/templates/submission.ts', find: 'if (held) {', replace: 'if (false) {' }],
    tests: ['tests/templates/name-reuse.test.ts'],
    filter: 'before asking Meta; after 30 days',
  },
  {
    name: 'template-name-taken-refusal',
    breaks: "Meta's refusal of a held name and language (2388023) answered 502 BAD_GATEWAY instead of 409 CONFLICT saying why",
    edits: [{ file: 'src/modules/templates/submission.ts', find: 'if (!answer.ok && answer.nameTaken) {', replace: 'if (false) {' }],
    tests: ['tests/templates/name-reuse.test.ts'],
    filter: 'without the service knowing when',
  },
  {
    name: 'backup-hmac',
    breaks:
      'a backup repacked with a planted file and its checksum recomputed is restored: the checksum anyone can recompute is all restore checks',
    edits: [
      {
        file: 'src/db/backup.ts',
        find: 'const verifiedBy = authenticatingKey(header, keys)',
        replace: 'const verifiedBy = authenticatingKey(header, keys) ?? keys[0]!',
      },
    ],
    tests: ['tests/db/backup.outer.test.ts'],
    database: 'embedded',
  },
  {
    name: 'backup-layout',
    breaks:
      'a backup holding a file no PostgreSQL data directory has (beside PG_VERSION, at the top) is restored with it into DATA_DIR/pgdata',
    edits: [{ file: 'src/db/backup.ts', find: 'if (!placed) throw refuse', replace: 'if (false) throw refuse' }],
    tests: ['tests/db/backup.outer.test.ts'],
    database: 'embedded',
  },
  {
    name: 'template-approved',
    breaks: 'a WhatsApp template that is pending, rejected or paused charged, then refused by Meta (132001, 132015) and refunded',
    edits: [{ file: 'src/modules/templates/fill.ts', find: "if (t.status === 'approved') return", replace: 'return' }],
    tests: ['tests/templates/send.test.ts'],
    filter: 'not approved, another sender',
  },
  {
    name: 'template-button',
    breaks: "a WhatsApp template's URL button sent without its value: charged, then refused by Meta (131008) and refunded",
    edits: [{ file: 'src/modules/templates/fill.ts', find: 'if (value === undefined) {', replace: 'if (false) {' }],
    tests: ['tests/templates/send.test.ts'],
    filter: 'not approved, another sender|bulk: each entry',
  },
  {
    name: 'verification-code-masked',
    breaks:
      "a verification's one-time code kept readable on its message's row (body, variables) until the provider has it: GET /messages, pages and exports of a queued one show it",
    edits: [
      {
        file: 'src/modules/messages/service.ts',
        find: 'const stored = secret === undefined ? message : await sealedMessage(deps.secrets, message, secret, requestToken)',
        replace: 'const stored = message',
      },
    ],
    tests: ['tests/templates/verifications.test.ts'],
    filter: 'queued verification',
  },
  {
    name: 'verification-code-recovered',
    breaks:
      'a verification whose hand-off is recovered from the row sends the masked code (••••••) instead of the code: the customer cannot log in',
    edits: [
      {
        file: RECOVERY,
        find: 'outgoingOf(await openedMessage(deps.secrets, m), sender.providerName)',
        replace: 'outgoingOf(m, sender.providerName)',
      },
    ],
    tests: ['tests/templates/verifications.test.ts'],
    filter: 'queued verification',
  },
  {
    name: 'campaign-media-header',
    breaks:
      'a campaign of a template with an image header created without its link: every recipient skipped at run time instead of a 422 naming parameters.header when it is made',
    edits: [
      {
        file: 'src/modules/campaigns/wa.ts',
        find: "if (given.header === undefined)\n      throw badValue(\n        `${at}.header: missing (${what}'s header is a ${p.header.type}",
        replace: "if (false)\n      throw badValue(\n        `${at}.header: missing (${what}'s header is a ${p.header.type}",
      },
    ],
    tests: ['tests/templates/campaigns.test.ts'],
    filter: 'media header',
  },
  {
    name: 'max-price-send',
    breaks: 'a send or a bulk entry whose price is above its max_price charged and handed over instead of refused with PRICE_ABOVE_MAX',
    edits: [{ file: ADMISSION, find: 'if (aboveMax(f.price, p.maxPrice)) return', replace: 'if (false) return' }],
    tests: [QUOTE],
    filter: 'max_price',
  },
  {
    name: 'max-price-boundary',
    breaks: 'a message that costs exactly its max_price refused, as if the cap were exclusive',
    edits: [{ file: ADMISSION, find: 'maxPrice !== null && price > maxPrice', replace: 'maxPrice !== null && price >= maxPrice' }],
    tests: [QUOTE],
    filter: 'at the price it goes',
  },
  {
    name: 'max-price-campaign',
    breaks: "a campaign whose messages' price is above its max_price charges them instead of pausing with PRICE_ABOVE_MAX",
    edits: [
      { file: 'src/modules/campaigns/engine.ts', find: 'if (aboveMax(account.cost, campaign.max_price)) {', replace: 'if (false) {' },
    ],
    tests: [QUOTE],
    filter: "campaign's max_price",
  },
  {
    name: 'quote-takes-no-budget',
    breaks: "a quote holds messaging-limit uses (as a send does before its charge): quoting uses the sender's budget",
    edits: [
      {
        file: ADMISSION,
        find: '    if (businessInitiated(f)) {\n      const budget',
        replace:
          "    if (businessInitiated(f) && (await (await import('../budgets/guard')).holdMessagingLimit(deps, crypto.randomUUID(), [p]))) {\n      const budget",
      },
    ],
    tests: [QUOTE],
    filter: 'nothing taken',
  },
  {
    name: 'quote-takes-no-pace',
    breaks: "a quote takes a slot at the sender's pace for each entry that would go: quoting delays real sends",
    edits: [
      {
        file: ADMISSION,
        find: '    results.push({ ...entry, would_send: true })',
        replace: '    await p.sender.pacer.take(p.phone)\n    results.push({ ...entry, would_send: true })',
      },
    ],
    tests: [QUOTE],
    filter: 'nothing taken',
  },
  {
    name: 'quote-charges-nothing',
    breaks: 'a quote debits the balance (with its ledger row) for each entry that would go',
    edits: [
      {
        file: ADMISSION,
        find: '    results.push({ ...entry, would_send: true })',
        replace:
          "    await (await import('../ledger/service')).credit(deps.sql, accountId, 'adjustment', -f.price, 'quote')\n    results.push({ ...entry, would_send: true })",
      },
    ],
    tests: [QUOTE],
    filter: 'nothing taken',
  },
  {
    name: 'quote-simulates-limit',
    breaks: "a quote says every business-initiated entry would go, though the bulk's messaging limit refuses those past its room",
    edits: [{ file: ADMISSION, find: '        budget.room--\n', replace: '' }],
    tests: [QUOTE],
    filter: 'nothing taken|property',
  },
  {
    name: 'template-member-tenant',
    breaks:
      "a member of account A allowed to manage templates creates, edits and deletes them on account B's sender (the dashboard's my-senders paths)",
    edits: [{ file: 'src/modules/templates/rights.ts', find: 'if (!own) throw notFound()', replace: 'if (false) throw notFound()' }],
    tests: ['tests/templates/member-pages.test.ts'],
    filter: 'attacker',
  },
  {
    name: 'template-editor-step-tenant',
    breaks:
      "a member of account A allowed to manage templates gets the field editor's Preview, Add and Remove answered on account B's sender or the default sender (the create's guard skipped for a step)",
    edits: [
      {
        file: 'src/modules/templates/wa-pages.tsx',
        find: 'await requireMayChange(d.sql, where.actor, where.senderId === 0 ? null : where.senderId)',
        replace: '',
      },
    ],
    tests: ['tests/templates/member-pages.test.ts'],
    filter: 'attacker',
  },
  {
    name: 'template-delete-stops',
    breaks: 'a deleted WhatsApp template still sends (charged, then refused by Meta: 132001) and campaigns of it go on',
    edits: [{ file: 'src/modules/templates/edits.ts', find: "{ status: 'deleted', reason: `deleted by", replace: '{ reason: `deleted by' }],
    tests: ['tests/templates/edits.test.ts'],
    filter: 'one language goes',
  },
  {
    name: 'template-delete-language',
    breaks: "deleting one language of a Meta template deletes every language of its name at Meta (Meta's DELETE by name alone)",
    edits: [
      {
        file: 'src/providers/meta/templates.ts',
        find: 'new URLSearchParams({ name: template.name, hsm_id: template.ref })',
        replace: 'new URLSearchParams({ name: template.name })',
      },
    ],
    tests: ['tests/templates/edits.test.ts'],
    filter: 'one language goes',
  },
  {
    name: 'read-charges',
    breaks: "marking a customer's message read (POST /inbound/{id}/read) takes money from the balance: a read receipt is never charged",
    edits: [
      {
        file: 'src/modules/inbound/manners.ts',
        find: '  const answer = await provider.markRead({ messageId: row.provider_message_id, phone: row.phone, typing })',
        replace:
          '  await deps.sql`update accounts set balance = balance - 1 where id = ${accountId}`\n' +
          '  const answer = await provider.markRead({ messageId: row.provider_message_id, phone: row.phone, typing })',
      },
    ],
    tests: ['tests/inbound/manners.test.ts'],
    filter: 'never charged',
  },
  {
    name: 'read-other-account',
    breaks: "an API key marks another account's inbound message read (and shows a typing indicator to that tenant's customer)",
    edits: [
      {
        file: 'src/modules/inbound/manners.ts',
        find: 'select provider_message_id, sender_id, phone, type from inbound_messages where id = ${id} and account_id = ${accountId}`',
        replace: 'select provider_message_id, sender_id, phone, type from inbound_messages where id = ${id}`',
      },
    ],
    tests: ['tests/inbound/manners.test.ts'],
    filter: 'attacker',
  },
  {
    name: 'reply-to-other-account',
    breaks: "a send quotes or reacts to another account's message on a number both share (reply_to, reaction.message_id)",
    edits: [
      {
        file: 'src/modules/inbound/quotes.ts',
        find: 'where account_id = ${accountId} and phone = ${phone} and sender_id is not distinct from ${senderId}\n      and (id = ${ourId}',
        replace: 'where phone = ${phone} and sender_id is not distinct from ${senderId}\n      and (id = ${ourId}',
      },
      {
        file: 'src/modules/inbound/quotes.ts',
        find: 'where account_id = ${accountId} and phone = ${phone} and sender_id is not distinct from ${senderId}\n      and message_sid',
        replace: 'where phone = ${phone} and sender_id is not distinct from ${senderId}\n      and message_sid',
      },
    ],
    tests: ['tests/inbound/manners.test.ts'],
    filter: 'share',
  },
  {
    name: 'optout-by-user-id',
    breaks:
      'a customer who wrote STOP by WhatsApp user id (a username hiding the phone) is sent to at the phone once Meta links the two: the opt-out stays on the user id',
    edits: [{ file: 'src/modules/inbound/customers.ts', find: '    await rekeyOptOuts(tx, accounts, from, to)\n', replace: '' }],
    tests: ['tests/inbound/user-ids.test.ts'],
    filter: 'STOP by user id',
  },
  {
    name: 'user-id-rekey-tenant',
    breaks:
      "a tenant's own signed Meta webhook naming another tenant's customer's user id with a phone of its choosing re-keys that customer's opt-outs and contact in every account",
    edits: [
      {
        file: 'src/modules/inbound/customers.ts',
        find: '  if (senderId === null) return null\n  const rows',
        replace: '  if (senderId === null || true) return null\n  const rows',
      },
    ],
    tests: ['tests/inbound/user-ids.test.ts'],
    filter: "another tenant's key",
  },
  {
    name: 'user-id-link-account',
    breaks:
      "an account's request by user id (a filter, a conversation, an opt-out) follows another tenant's link of that user id to a phone: its customer's messages vanish behind the planted phone",
    edits: [
      {
        file: 'src/modules/customers/service.ts',
        find: 'and (l.sender_key = 0 or exists',
        replace: 'and (true or exists',
      },
    ],
    tests: ['tests/inbound/user-ids.test.ts'],
    filter: "another tenant's key",
  },
  {
    name: 'user-id-link-sender',
    breaks:
      "a send by user id follows a link another tenant's signed webhook made on its own number: the account's message goes to the phone that tenant planted",
    edits: [
      {
        file: 'src/modules/customers/service.ts',
        find: 'select phone from customer_links where sender_key = ${senderKey(senderId)} and user_id = ${userId}`',
        replace: 'select phone from customer_links where user_id = ${userId} order by updated_at desc limit 1`',
      },
    ],
    tests: ['tests/inbound/user-ids.test.ts'],
    filter: "another tenant's key",
  },
  {
    name: 'user-id-stop-at-handoff',
    breaks:
      "a message charged to a WhatsApp user id and waiting for its hand-off is handed over after the customer's STOP when Meta linked the user id to a phone first (the opt-out is the phone's)",
    edits: [
      {
        file: HANDOFF,
        find: 'and o.phone in (m.phone, (select l.phone from customer_links l where l.sender_key = coalesce(m.sender_id, 0) and l.user_id = m.phone))',
        replace: 'and o.phone = m.phone',
      },
    ],
    tests: ['tests/inbound/user-ids.test.ts'],
    filter: 'waiting for its retry',
  },
  {
    name: 'user-id-budget-rekey',
    breaks:
      'a customer sent a template by WhatsApp user id, then by phone once Meta linked the two, counts twice against the messaging limit',
    edits: [{ file: 'src/modules/inbound/customers.ts', find: '    await rekeyUses(tx, senderId, from, to)\n', replace: '' }],
    tests: ['tests/inbound/user-id-links.test.ts'],
    filter: 'counts once',
  },
  {
    name: 'user-id-status-link-tenant',
    breaks:
      "a tenant's own signed Meta status naming another tenant's message, with its user id and a phone of its choosing, links them on that tenant's number: its sends by user id go to the planted phone",
    edits: [
      {
        file: 'src/modules/inbound/customers.ts',
        find: 'where message_sid = ${report.sid} and coalesce(sender_id, 0) = any(${report.senders.map((id) => id ?? 0)}::bigint[])',
        replace: 'where message_sid = ${report.sid}',
      },
    ],
    tests: ['tests/inbound/user-id-links.test.ts'],
    filter: "another tenant's own signed status",
  },
  {
    name: 'user-id-campaign-skip',
    breaks:
      'a campaign through a Twilio sender charges a contact known only by WhatsApp user id and hands it to a provider that cannot reach it, instead of skipping it uncharged',
    edits: [
      {
        file: 'src/modules/campaigns/engine.ts',
        find: 'const userIdOnly = new Set(reachesUserIds ? [] :',
        replace: 'const userIdOnly = new Set(true ? [] :',
      },
    ],
    tests: ['tests/inbound/user-id-links.test.ts'],
    filter: 'through a Twilio sender',
  },
  {
    name: 'inbox-thread-other-account',
    breaks:
      "a member polls another account's conversation with a phone it has none with (the open page's thread, GET .../inbox/:phone/thread)",
    edits: [
      {
        file: 'src/modules/inbound/pages.tsx',
        find: 'if (head.total === 0) return notFound(scope.session)\n    await markOpenedConversation',
        replace: 'await markOpenedConversation',
      },
    ],
    tests: ['tests/dashboard/inbox-manners.test.ts'],
    filter: 'attacker',
  },
  {
    name: 'inbox-marks-read-unasked',
    breaks: 'opening a conversation in the inbox sends read receipts to the customer though the account never chose so (off by default)',
    edits: [
      {
        file: 'src/modules/inbound/manners.ts',
        find: '  if (!(await inboxMarksRead(deps.sql, accountId))) return false\n',
        replace: '',
      },
    ],
    tests: ['tests/dashboard/inbox-manners.test.ts'],
    filter: 'off by default',
  },
  {
    name: 'health-account-owner',
    breaks:
      "a Meta health change (capability, restriction, quality) naming a WhatsApp Business Account of none of its signer's senders changes the signer's own senders",
    edits: [
      {
        file: META_WEBHOOK,
        find: ".filter((s) => s.settings.businessAccountId === id && (digits === '' ||",
        replace: ".filter((s) => (digits === '' ||",
      },
    ],
    tests: [SENDER_HEALTH],
    filter: 'own app secret',
  },
  {
    name: 'health-number-owner',
    breaks: "a phone_number_quality_update of the signer's account naming another tenant's number flags (or limits) the signer's senders",
    edits: [
      {
        file: META_WEBHOOK,
        find: "(digits === '' || s.number.replace(/\\D/g, '') === digits)",
        replace: '(true)',
      },
    ],
    tests: [SENDER_HEALTH],
    filter: 'own app secret',
  },
  {
    name: 'health-restricted-before-charge',
    breaks: 'a send Meta restricted the sender from is charged and handed over (Meta refuses it, or it slips through a restriction)',
    edits: [
      {
        file: 'src/modules/messages/admission.ts',
        find: '  const restricted = senderRestricted(p, f, at)\n  if (restricted) return restricted\n',
        replace: '',
      },
    ],
    tests: [SENDER_HEALTH],
    filter: 'restriction refuses',
  },
  {
    name: 'charge-price-cap-single',
    breaks:
      "a single send is charged above its max_price: the operator raised the price after admission's check (while the send waited for its pace) and the charge takes the new price",
    edits: [
      {
        file: LEDGER,
        find: 'from capped c where not c.over_cap and not c.over_max',
        replace: 'from capped c where not c.over_cap',
      },
    ],
    tests: ['tests/messages/price-cap-race.test.ts'],
    filter: 'single send whose price is raised',
  },
  {
    name: 'charge-price-cap-bulk',
    breaks: "a bulk's entries are charged above their max_price: the price was raised after the bulk's checks, before its charge",
    edits: [
      {
        file: LEDGER,
        find: "when exists (select 1 from priced where over_max) then 'price'",
        replace: "when false then 'price'",
      },
    ],
    tests: ['tests/messages/price-cap-race.test.ts'],
    filter: 'bulk whose price is raised',
  },
  {
    name: 'settled-event-once',
    breaks:
      'a message.settled event for a report that settles nothing: a later report naming another category (the message was settled already) announces a settlement that did not happen',
    edits: [
      {
        file: MACHINE,
        find: 't.settles and t.by_provider and t.reported <> t.category as settled',
        replace: 't.by_provider and t.reported <> t.category as settled',
      },
    ],
    tests: ['tests/status/settled-event.test.ts'],
    filter: 'settled up',
  },
  {
    name: 'parked-worker-sid-lock',
    breaks:
      'a parked report applied by the worker while another instance receives a newer report of the same SID: the two race for the message, and a newer status applied first makes the parked one a backwards move, its event lost',
    edits: [
      {
        file: RECEIVER,
        find: 'select message_sid from candidates where pg_try_advisory_xact_lock(${SID_LOCK}, hashtext(message_sid))',
        replace: 'select message_sid from candidates',
      },
    ],
    tests: ['tests/status/parked-reports.test.ts'],
    filter: "takes the SID's lock",
    database: 'postgres',
  },
  {
    name: 'health-campaign-pause',
    breaks: "a flagged or restricted sender's campaign goes on charging and sending",
    edits: [{ file: 'src/modules/campaigns/engine.ts', find: '    if (unhealthy) {', replace: '    if (false && unhealthy) {' }],
    tests: [SENDER_HEALTH],
    filter: 'flagged sender pauses',
  },
  {
    name: 'receive-deadline',
    breaks:
      'a group commit of status callbacks whose statement never comes back holds up every later callback of the process for ever (the fault test stalled)',
    edits: [{ file: RECEIVER, find: 'ms: RECEIVE_DEADLINE_MS,', replace: 'ms: 600_000,' }],
    tests: ['tests/status/receiver-stall.outer.test.ts'],
    database: 'postgres',
  },
  {
    name: 'receive-end-session',
    breaks: "a status callbacks' transaction past its deadline keeps its session, its locks and a connection of the pool",
    edits: [
      {
        file: RECEIVER,
        find: "options.signal.addEventListener('abort', () => endSession(sql, locking, 'status reports'), { once: true })",
        replace: '',
      },
    ],
    tests: ['tests/status/receiver-stall.outer.test.ts'],
    database: 'postgres',
  },
  {
    name: 'wire-retry-answered',
    breaks:
      'a connection cut after the server answered is opened again behind the driver: the statement it carried is never answered (nor failed), and its request hangs',
    edits: [
      {
        file: 'src/db/wire.ts',
        find: 'if (this.answered || this.notWaited || this.gone) return void this.emit',
        replace: 'if (this.notWaited || this.gone) return void this.emit',
      },
    ],
    tests: ['tests/messages/lost-commit.outer.test.ts'],
    filter: 'breaks midway',
    database: 'postgres',
  },
  {
    name: 'wire-plain-resend-in-transaction',
    breaks:
      "a statement function's call that failed inside a transaction is sent again as the plain statement in the aborted transaction: the caller gets 25P02 instead of the call's own error",
    edits: [{ file: 'src/db/wire.ts', find: 'if (ready[5] === IDLE) return this.resendPlain(ex)', replace: 'return this.resendPlain(ex)' }],
    // The whole file: its tests build on each other's rows.
    tests: ['tests/db/statement-functions.outer.test.ts'],
    database: 'postgres',
  },
  {
    name: 'wire-wait-starting-up',
    breaks: 'a statement made while the database starts up (57P03) fails at once instead of waiting for it',
    edits: [{ file: 'src/db/wire.ts', find: 'if (isWaitable(error)) return early(error)', replace: 'if (false) return early(error)' }],
    tests: ['tests/messages/lost-commit.outer.test.ts'],
    filter: 'refused with a starting',
    database: 'postgres',
  },
  {
    name: 'verification-per-number',
    breaks: 'an account starts verifications for one number without limit: each one a charged message, the number flooded with codes',
    edits: [{ file: 'src/modules/verifications/service.ts', find: 'if (mine!.number >= perNumber) throw', replace: 'if (false) throw' }],
    tests: ['tests/templates/verifications.test.ts'],
    filter: 'per number and per account',
  },
  {
    name: 'verification-per-account',
    breaks: "an account starts verifications for all numbers without limit: a leaked key spends the account's balance on codes",
    edits: [{ file: 'src/modules/verifications/service.ts', find: 'if (mine!.account >= perAccount) throw', replace: 'if (false) throw' }],
    tests: ['tests/templates/verifications.test.ts'],
    filter: 'per number and per account',
  },
  {
    name: 'verification-per-number-total',
    breaks: 'a number is flooded with codes through many accounts, each within its own limit',
    edits: [
      { file: 'src/modules/verifications/service.ts', find: 'if (all!.number >= perNumberTotal) throw', replace: 'if (false) throw' },
    ],
    tests: ['tests/templates/verifications.test.ts'],
    filter: 'flooded through many accounts',
  },
  {
    name: 'verification-number-lock',
    breaks:
      "concurrent starts from several accounts count a number's verifications before each other's commit: together they pass its limit",
    edits: [
      {
        file: 'src/modules/verifications/service.ts',
        find: 'await tx`select pg_advisory_xact_lock(${NUMBER_LOCK}, hashtext(${phone}))`',
        replace: '',
      },
    ],
    tests: ['tests/templates/verifications.test.ts'],
    filter: "cannot pass the number's total together",
    database: 'postgres',
  },
  {
    name: 'verification-code-compared',
    breaks: 'any code approves a verification: the one-time password proves nothing',
    edits: [
      {
        file: 'src/modules/verifications/service.ts',
        find: 'return secrets.matchesDigest(code, contextOf(row.code_salt), row.code_hash)',
        replace: 'return Promise.resolve(code.length > 0)',
      },
    ],
    tests: ['tests/templates/verifications.test.ts'],
    filter: 'a wrong code leaves it pending',
  },
  {
    name: 'verification-expiry',
    breaks: "a verification's code approves after its lifetime (VERIFY_TTL_SECONDS): an old code intercepted later still logs in",
    edits: [{ file: 'src/modules/verifications/service.ts', find: 'if (row.expired) {', replace: 'if (false) {' }],
    tests: ['tests/templates/verifications.test.ts'],
    filter: 'expires with the clock',
  },
  {
    name: 'verification-attempts',
    breaks: 'wrong codes never end a verification: a guesser tries every code',
    edits: [
      {
        file: 'src/modules/verifications/service.ts',
        find: "attempts >= row.max_attempts ? 'too_many_attempts' : 'pending'",
        replace: "false ? 'too_many_attempts' : 'pending'",
      },
    ],
    tests: ['tests/templates/verifications.test.ts'],
    filter: 'five wrong codes lock it',
  },
  {
    name: 'verification-ended-stays',
    breaks: 'a verification locked by too many wrong codes (or expired) is approved by the right code after all',
    edits: [{ file: 'src/modules/verifications/service.ts', find: "if (row.status !== 'pending') {", replace: 'if (false) {' }],
    tests: ['tests/templates/verifications.test.ts'],
    filter: 'five wrong codes lock it',
  },
  {
    name: 'verification-check-lock',
    breaks:
      'concurrent wrong codes each read the same attempts before any is written: a guesser sending them at once gets more tries than VERIFY_MAX_ATTEMPTS',
    edits: [
      {
        file: 'src/modules/verifications/service.ts',
        find: 'const row = await rowOf(tx, deps, accountId, id, true)',
        replace: 'const row = await rowOf(tx, deps, accountId, id, false)',
      },
    ],
    tests: ['tests/templates/verifications.test.ts'],
    filter: 'concurrent checks use an attempt each',
    database: 'postgres',
  },
  {
    name: 'template-extra-variable',
    breaks:
      'a variable the template does not have (a misspelt name, one too many) is dropped in silence: the message goes without what the integrator meant, charged',
    edits: [
      {
        file: 'src/modules/templates/fill.ts',
        find: 'if (!keys.includes(key)) throw badValue',
        replace: 'if (false) throw badValue',
      },
    ],
    tests: ['tests/templates/send.test.ts'],
    filter: 'each parameter rule',
  },
  {
    name: 'template-extra-button',
    breaks: 'a value for a button that takes none is dropped in silence: the message goes without what the integrator meant, charged',
    edits: [
      {
        file: 'src/modules/templates/fill.ts',
        find: 'if (!p.buttons.some((x) => x.index === b.index)) {',
        replace: 'if (false) {',
      },
    ],
    tests: ['tests/templates/send.test.ts'],
    filter: 'each parameter rule',
  },
  {
    name: 'template-impending-category',
    breaks:
      "Meta's impending category notice (correct_category) changes the template's category at once, before Meta does: its sends are priced in a category Meta does not charge yet",
    edits: [
      {
        file: 'src/modules/templates/notices.ts',
        find: "if (notice.kind === 'category' && notice.previous === null) {",
        replace: 'if (false) {',
      },
      { file: 'src/modules/templates/notices.ts', find: 'if (notice.previous === null) return null', replace: '' },
      {
        file: 'src/modules/templates/notices.ts',
        find: 'const category = categoryOf(notice.next)',
        replace: 'const category = categoryOf(notice.correct ?? notice.next)',
      },
    ],
    tests: ['tests/templates/webhooks.test.ts'],
    filter: 'the impending notice',
  },
  {
    name: 'template-reinstated',
    breaks: "Meta's REINSTATED leaves a paused template paused here: its sends are refused and its campaigns never resume",
    edits: [{ file: 'src/modules/templates/catalog.ts', find: "if (w === 'reinstated') return 'approved'", replace: '' }],
    tests: ['tests/templates/webhooks.test.ts'],
    filter: 'REINSTATED is approved again',
  },
  {
    name: 'template-flagged-not-paused',
    breaks:
      "Meta's FLAGGED warning (quality fell, a pause may follow) is taken as a pause: the template's sends are refused while Meta still takes them",
    edits: [
      {
        file: 'src/modules/templates/notices.ts',
        find: "if (notice.event === 'FLAGGED') return { flagged: true, reason: notice.reason }",
        replace: "if (notice.event === 'FLAGGED') return { status: 'paused', reason: notice.reason }",
      },
    ],
    tests: ['tests/templates/webhooks.test.ts'],
    filter: 'FLAGGED is recorded once',
  },
  {
    name: 'campaign-template-pause',
    breaks:
      'a campaign whose WhatsApp template Meta paused runs to its end instead of pausing: none of its recipients gets the message, and nothing resumes it when the template is approved again',
    edits: [{ file: 'src/modules/campaigns/engine.ts', find: "if (wa && wa.status !== 'approved') {", replace: 'if (false) {' }],
    tests: ['tests/templates/campaigns.test.ts'],
    filter: 'paused by Meta: the campaign pauses',
  },
  {
    name: 'campaign-template-resume-early',
    breaks: 'a campaign paused for its template is resumed while the template is still not approved (and paused again, round after round)',
    edits: [
      {
        file: 'src/modules/campaigns/engine.ts',
        find: "where w.id = c.wa_template_id and w.status = 'approved' and c.status = 'paused'",
        replace: "where w.id = c.wa_template_id and c.status = 'paused'",
      },
    ],
    tests: ['tests/templates/campaigns.test.ts'],
    filter: 'paused by Meta: the campaign pauses',
  },
  {
    name: 'campaign-template-never-resumes',
    breaks: 'a campaign paused for its template stays paused when Meta approves it again: its recipients never get the message',
    edits: [
      {
        file: 'src/modules/campaigns/engine.ts',
        find: "where w.id = c.wa_template_id and w.status = 'approved' and c.status = 'paused'",
        replace: "where w.id = c.wa_template_id and w.status = 'approved' and c.status = 'paused' and false",
      },
    ],
    tests: ['tests/templates/campaigns.test.ts'],
    filter: 'paused by Meta: the campaign pauses',
  },
  {
    name: 'campaign-set-aside',
    breaks:
      "a campaign's messages charged before Meta paused their template are handed over all the same: Meta refuses each (132015), they are refunded, and the campaign resumed never sends them",
    edits: [
      {
        file: 'src/modules/messages/handoff.ts',
        find: 'm.campaign_id is not null and exists (',
        replace: 'false and exists (',
      },
    ],
    tests: ['tests/templates/campaign-pause.test.ts'],
    filter: 'paused by Meta midway',
  },
  {
    name: 'set-aside-release-unapproved',
    breaks:
      'messages set aside for their paused template are given back to recovery while it is still paused: set aside again round after round, until quarantined for an operator instead of sent',
    edits: [
      {
        file: 'src/modules/campaigns/engine.ts',
        find: "and exists (select 1 from wa_templates w where w.id = (m.provider_template->>'templateId')::bigint and w.status = 'approved')\n    returning m.id`",
        replace: 'returning m.id`',
      },
    ],
    tests: ['tests/templates/campaign-pause.test.ts'],
    filter: 'paused by Meta midway',
  },
  {
    name: 'set-aside-never-released',
    breaks: 'messages set aside for their paused template stay queued and charged when it is approved again: never sent, never refunded',
    edits: [
      {
        file: 'src/modules/campaigns/engine.ts',
        find: "where m.set_aside_at is not null and m.status = 'queued'\n",
        replace: 'where false\n',
      },
    ],
    tests: ['tests/templates/campaign-pause.test.ts'],
    filter: 'paused by Meta midway',
  },
  {
    name: 'set-aside-cancel-refund',
    breaks: "a cancelled campaign's messages set aside for its template stay charged for good: never sent, never refunded",
    edits: [
      {
        file: 'src/modules/campaigns/engine.ts',
        find: "select id from messages where campaign_id = ${id} and set_aside_at is not null and status = 'queued'",
        replace: 'select id from messages where false',
      },
    ],
    tests: ['tests/templates/campaign-pause.test.ts'],
    filter: 'its campaign cancelled',
  },
  {
    name: 'set-aside-expiry',
    breaks: 'messages set aside for a template never approved again stay charged past their validity: never sent, never refunded',
    edits: [
      {
        file: 'src/modules/campaigns/engine.ts',
        find: 'created_at + make_interval(secs => ${config.messageValiditySeconds})) <= ${now}',
        replace: 'created_at + make_interval(secs => ${config.messageValiditySeconds})) <= ${now} and false',
      },
    ],
    tests: ['tests/templates/campaign-pause.test.ts'],
    filter: "not approved again within the messages' validity",
  },
  {
    name: 'template-event-accounts',
    breaks:
      "a template's status change is announced (template.status_changed) to every account's registrations, not only to the accounts whose senders have it: one tenant hears of another's templates",
    edits: [
      {
        file: 'src/modules/templates/events.ts',
        find: 'from account_senders s where s.sender_id = ${template.sender_id}`',
        replace: 'from account_senders s`',
      },
    ],
    tests: ['tests/templates/status-replay.test.ts'],
  },
  {
    name: 'template-status-words',
    breaks:
      "Meta's IN_APPEAL, LIMIT_EXCEEDED, ARCHIVED and LOCKED change nothing here: the template stays approved and its sends are charged, refused by Meta and refunded",
    edits: [
      {
        file: 'src/modules/templates/catalog.ts',
        find: 'return (TEMPLATE_STATUSES as readonly string[]).includes(w)',
        replace:
          "return (TEMPLATE_STATUSES as readonly string[]).filter((s) => !['in_appeal', 'limit_exceeded', 'archived', 'locked'].includes(s)).includes(w)",
      },
    ],
    tests: ['tests/templates/statuses.test.ts'],
    filter: 'beyond paused and disabled',
  },
  {
    name: 'dashboard-escape',
    breaks:
      "the values an integrator filled a template with are written into the dashboard's pages unescaped: a value with markup runs in an operator's browser",
    edits: [{ file: 'src/dashboard/jsx.ts', find: 'return text.replace(/[&<>"\']/g, (c) => ESCAPES[c]!)', replace: 'return text' }],
    tests: ['tests/templates/pages-text.test.ts'],
  },
]
