-- why: money has one owner. One function answers "the price of account X now"; every charge carries
-- the token of the request that made it, unique per (request, entry), so a repeated charge (a retry
-- after a lost COMMIT answer, an Idempotency-Key recovery) finds the first one instead of charging
-- again; a hand-off lease carries the token of its holder, so only the holder hands a message over;
-- a message recovered too often without an outcome is quarantined for an operator instead of being
-- handed over again and again.

create function account_price(account bigint) returns bigint language sql stable as $$
  select coalesce(
    (select cost_per_message from prices where account_id = account),
    (select cost_per_message from prices where account_id is null))
$$;

alter table messages
  add column request_token uuid,
  add column request_item integer,
  add column handoff_token uuid,
  add column handoff_recoveries integer not null default 0,
  add column quarantined_at timestamptz;
create unique index messages_request_item on messages (request_token, request_item) where request_token is not null;
create index messages_quarantined on messages (quarantined_at) where quarantined_at is not null;

alter table idempotency_keys add column request_token uuid;
