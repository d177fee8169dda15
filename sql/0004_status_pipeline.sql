-- why: the status pipeline. Every accepted status change writes its message.status event here in
-- the same transaction (an outbox), and the delivery worker sends it; attempts are logged. The
-- simulator's status reports are rows too, so they survive a restart.

create table webhook_events (
  id bigint generated always as identity primary key,
  webhook_id text not null,
  api_key_id bigint not null references api_keys (id) on delete cascade,
  message_id bigint not null references messages (id),
  payload text not null, -- the exact JSON body, signed and sent as it is on every attempt
  status text not null default 'pending',
  attempts integer not null default 0,
  next_attempt_at timestamptz not null default now(),
  lease_token uuid,
  lease_until timestamptz,
  last_error text,
  created_at timestamptz not null default now(),
  delivered_at timestamptz,
  constraint webhook_events_webhook_id_unique unique (webhook_id),
  constraint webhook_events_status_known check (status in ('pending', 'delivered', 'failed'))
);
create index webhook_events_due on webhook_events (next_attempt_at, id) where status = 'pending';
create index webhook_events_message_order on webhook_events (message_id, id) where status = 'pending';
create index webhook_events_by_key on webhook_events (api_key_id, status, id desc);

create table webhook_attempts (
  id bigint generated always as identity primary key,
  event_id bigint not null references webhook_events (id) on delete cascade,
  attempt integer not null,
  url text not null,
  status_code integer,
  latency_ms integer not null,
  error text,
  created_at timestamptz not null default now()
);
create index webhook_attempts_event on webhook_attempts (event_id, attempt);

create table simulator_reports (
  id bigint generated always as identity primary key,
  message_sid text not null,
  status text not null,
  error_code integer,
  error_message text,
  due_at timestamptz not null,
  constraint simulator_reports_status_known check (status in ('delivered', 'read', 'failed'))
);
create index simulator_reports_due on simulator_reports (due_at, id);
