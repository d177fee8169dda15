-- why: inbound messages (issue 19, part 1). What customers write to our numbers, stored once per
-- provider message id (a provider's repeat delivery inserts nothing), linked to the sender it reached
-- (null: the deployment's default number), to an account (null: nobody could be told apart, operators
-- see it in the admin API) and to the account's contact with that phone. `content` is the normalised
-- content of its type, `raw` the provider's own item. `received_at` is when the customer sent it (the
-- provider's clock, else ours): lists filter on it and the 24-hour window counts from it.

create table inbound_messages (
  id bigint generated always as identity primary key,
  provider text not null,
  provider_message_id text not null,
  sender_id bigint references senders (id),
  account_id bigint references accounts (id),
  contact_id bigint references contacts (id),
  phone text not null,
  name text,
  type text not null,
  text text,
  content jsonb not null,
  raw jsonb not null,
  received_at timestamptz not null,
  created_at timestamptz not null default now(),
  constraint inbound_messages_provider_id_unique unique (provider, provider_message_id)
);
create index inbound_messages_account_newest on inbound_messages (account_id, received_at desc, id desc);
create index inbound_messages_phone_newest on inbound_messages (phone, received_at desc);
create index inbound_messages_newest on inbound_messages (received_at desc, id desc);

-- Which account an inbound message belongs to: the one that last wrote to that phone through that sender.
create index messages_phone_newest on messages (phone, created_at desc);
