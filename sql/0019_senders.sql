-- Senders (issue 18): each account sends from its own WhatsApp numbers, each a provider with its own
-- credentials. The credentials are sealed by the service (AES-256-GCM, lib/secrets.ts) before they
-- reach the database: a dump holds none of them in clear. `identity` is what a provider's callbacks
-- name the sender by (Twilio's AccountSid, Meta's phone_number_id), in clear so a callback finds the
-- secret that verifies it. A message or campaign without a sender went through the deployment's
-- default sender (the environment's PROVIDER settings).

create table senders (
  id bigint generated always as identity primary key,
  provider text not null,
  name text not null,                       -- the display name
  number text not null,                     -- E.164, the number customers see
  identity text not null,                   -- what the provider's callbacks name it by
  credentials text not null,                -- sealed: v1.<key id>.<iv>.<ciphertext>
  rate_per_second double precision,         -- null: the provider's default pace
  recipient_gap_ms integer,                 -- null: the provider's default gap
  disabled_at timestamptz,
  checked_at timestamptz,
  check_ok boolean,
  check_detail text,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  constraint senders_rate_positive check (rate_per_second is null or rate_per_second > 0),
  constraint senders_gap_not_negative check (recipient_gap_ms is null or recipient_gap_ms >= 0),
  constraint senders_provider_number_unique unique (provider, number)
);
create index senders_identity on senders (provider, identity);

create table account_senders (
  account_id bigint not null references accounts (id),
  sender_id bigint not null references senders (id),
  is_default boolean not null default false,
  created_at timestamptz not null default now(),
  primary key (account_id, sender_id)
);
create unique index account_senders_one_default on account_senders (account_id) where is_default;
create index account_senders_sender on account_senders (sender_id);

alter table messages add column sender_id bigint references senders (id);
create index messages_account_sender_newest on messages (account_id, sender_id, created_at desc, id desc) where sender_id is not null;
alter table campaigns add column sender_id bigint references senders (id);
