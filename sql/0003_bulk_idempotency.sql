-- why: Idempotency-Key replays live in the database (shared by every instance, surviving restarts).

create table idempotency_keys (
  account_id bigint not null references accounts (id) on delete cascade,
  key text not null,
  endpoint text not null,
  fingerprint text not null,
  state text not null,
  response_status integer,
  response_body text, -- the exact JSON answer (jsonb would reorder its keys)
  created_at timestamptz not null default now(),
  completed_at timestamptz,
  constraint idempotency_keys_pk primary key (account_id, key),
  constraint idempotency_keys_state_known check (state in ('running', 'done'))
);
create index idempotency_keys_created on idempotency_keys (created_at);
