-- why: opt-outs (issue 19, part 4). A customer who wrote STOP (or whose provider said so, or whom an
-- operator, member or API key opted out) is not sent to again by that account until opted back in.
-- Two tables: opt_out_events is the history (every change: opted out or back in, when, how and by
-- whom), opt_outs the current state (a row while the phone is opted out, pointing at the event that
-- did it). Sends check opt_outs by its primary key; the history is never rewritten.

create table opt_out_events (
  id bigint generated always as identity primary key,
  account_id bigint not null references accounts (id),
  phone text not null,
  opted_out boolean not null,
  source text not null,
  -- The STOP/START word, or the provider's signal (Twilio's OptOutType, Meta's user_preferences).
  detail text,
  inbound_message_id bigint references inbound_messages (id),
  api_key_id bigint references api_keys (id),
  user_id bigint references users (id),
  -- Who, as the audit log names them: an e-mail, "API key N", "admin token", "customer", "provider".
  actor text not null,
  created_at timestamptz not null default now(),
  -- When it happened by the signal's clock (Meta's user_preferences timestamp), else created_at: a
  -- provider's late repeat of an older signal changes nothing.
  happened_at timestamptz not null default now(),
  constraint opt_out_events_source_known check (source in ('inbound', 'provider', 'api', 'dashboard', 'admin', 'import'))
);
create index opt_out_events_phone_newest on opt_out_events (account_id, phone, id desc);

create table opt_outs (
  account_id bigint not null references accounts (id),
  phone text not null,
  event_id bigint not null references opt_out_events (id),
  constraint opt_outs_pkey primary key (account_id, phone)
);

-- A campaign skips its opted-out recipients uncharged and counts them.
alter table campaigns add column opted_out integer not null default 0;
