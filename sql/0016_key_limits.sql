-- why: an API key has limits of its own (issue 17): a request rate per minute (null: the service's
-- KEY_RATE_LIMIT_PER_MINUTE), counted in the database so that it holds across instances, and an
-- optional daily spend cap in CURRENCY units (null: none), checked by the charge statements against
-- what the key was charged so far that day (spend_day, spent_today: kept under the key's row lock).
alter table api_keys
  add column rate_limit_per_minute integer,
  add column daily_spend_cap bigint,
  add column spend_day date,
  add column spent_today bigint not null default 0,
  add constraint api_keys_rate_limit_positive check (rate_limit_per_minute > 0),
  add constraint api_keys_spend_cap_not_negative check (daily_spend_cap >= 0);

-- One row per key: the minute window it is in and the requests counted in it, bumped by the key
-- lookup itself (one statement per group of requests). Unlogged: the counts are worth a minute, so
-- they skip the write-ahead log and the flush at commit; a database crash empties the table, which
-- forgets at most the windows that were open.
create unlogged table api_key_windows (
  api_key_id bigint primary key references api_keys (id) on delete cascade,
  -- minutes since the epoch, shifted by the key's own offset (see http/auth.ts)
  window_number bigint not null,
  used integer not null
);

