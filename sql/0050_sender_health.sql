-- why: number health steers the sends (issue 32 §4). Meta says a sender's health by webhooks and on its
-- phone number's node: the portfolio's messaging limit (business_capability_update, and the legacy
-- current_limit tiers of phone_number_quality_update), the account's restrictions (account_update
-- ACCOUNT_RESTRICTION with restriction_info, lifted by one without), the number's quality (quality_rating,
-- FLAGGED / UNFLAGGED) and its throughput (THROUGHPUT_UPGRADE). What Meta said is kept on the sender;
-- every change is a row of its history, with the provider's time (a late, older notice changes nothing).
alter table senders
  -- 'meta': Meta said the messaging limit (messaging_limit then holds Meta's word; null: unlimited), and an
  -- operator can no longer type it; 'operator': typed (or never said).
  add column messaging_limit_source text not null default 'operator' check (messaging_limit_source in ('operator', 'meta')),
  add column quality_rating text check (quality_rating in ('green', 'yellow', 'red', 'unknown')),
  add column quality_flagged boolean not null default false,
  add column throughput text check (throughput in ('standard', 'high')),
  -- Meta's restriction_info as given: [{"type": "RESTRICTED_BIZ_INITIATED_MESSAGING", "expires_at": "2026-...Z" | null}].
  add column restrictions jsonb not null default '[]'::jsonb;

create table sender_health_history (
  id bigserial primary key,
  sender_id bigint not null references senders (id) on delete cascade,
  field text not null check (field in ('quality', 'flagged', 'messaging_limit', 'throughput', 'restrictions')),
  old text,
  new text,
  -- 'meta' (a webhook), 'check' (a sender check read the node), 'sync' (a template sync read it).
  source text not null,
  provider_at timestamptz,
  created_at timestamptz not null
);
create index sender_health_history_sender on sender_health_history (sender_id, field, provider_at);
create index sender_health_history_recent on sender_health_history (sender_id, id desc);

alter table webhook_endpoints drop constraint webhook_endpoints_events_known;
alter table webhook_endpoints add constraint webhook_endpoints_events_known check (
  cardinality(events) > 0
  and events <@ array['message.status', 'message.received', 'contact.opted_out', 'contact.opted_in', 'balance.low',
                      'template.status_changed', 'verification.approved', 'sender.status_changed']
);
