-- why: partitioned history (issue 20, part 2). messages, ledger, webhook_events, webhook_attempts and
-- inbound_messages become partitioned by month of created_at (src/db/partitions.ts converts them: at
-- once while they are empty, else in bounded, resumable steps while the service serves). This
-- migration prepares what the conversion cannot do on its own:
--
-- 1. A foreign key into a partitioned table must name its partition key too, so the keys between the
--    history tables go (they are kept by the code that writes both sides in one statement): a ledger
--    row's or a webhook event's message, an attempt's event (retention now drops an event month and
--    its attempts together instead of cascading), an opt-out's or a medium's inbound message. Keys from
--    the history tables to ordinary tables (accounts, api_keys, senders, contacts...) stay.
alter table ledger drop constraint if exists ledger_message_id_fkey;
alter table webhook_events drop constraint if exists webhook_events_message_id_fkey;
alter table webhook_attempts drop constraint if exists webhook_attempts_event_id_fkey;
alter table opt_out_events drop constraint if exists opt_out_events_inbound_message_id_fkey;
alter table inbound_media drop constraint if exists inbound_media_inbound_message_id_fkey;

-- 2. A unique index on a partitioned table must include the partition key, so it holds per month
--    only. Where the code relies on a rule across months, a small ordinary table keeps it, written in
--    the same statement as the row it guards:
--    - one message per (campaign, contact): the campaign engine's `on conflict do nothing`. Filled
--      for campaigns that may still send (finished ones never insert again).
create table campaign_recipients (
  campaign_id bigint not null references campaigns (id) on delete cascade,
  contact_id bigint not null,
  primary key (campaign_id, contact_id)
);
insert into campaign_recipients (campaign_id, contact_id)
  select m.campaign_id, m.contact_id from messages m join campaigns c on c.id = m.campaign_id
  where m.contact_id is not null and c.status not in ('sent', 'cancelled')
  on conflict do nothing;

--    - one inbound message per provider message id: a provider's repeat delivery (days later, in
--      another month) stores nothing.
create table inbound_message_keys (
  provider text not null,
  provider_message_id text not null,
  primary key (provider, provider_message_id)
);
insert into inbound_message_keys (provider, provider_message_id)
  select provider, provider_message_id from inbound_messages
  on conflict do nothing;

-- 3. The conversion's own state, so a killed run resumes where it was: per table, the boundary where
--    the old table (attached whole as the partition `<table>_legacy`, FROM MINVALUE) ends and monthly
--    partitions begin, and when it was converted.
create table history_partitioning (
  table_name text primary key,
  boundary timestamptz not null,
  converted_at timestamptz
);
