-- why: events beyond message.status (issue 19, part 2). A webhook registration chooses its events
-- (default message.status only, so existing receivers see nothing new); every event row says which
-- event it is (the delivery log and `webhook listen` show it); an account may set a low-balance
-- threshold, whose crossing (a debit taking the balance from >= threshold to < threshold) is a
-- balance.low event.

alter table webhook_endpoints
  add column events text[] not null default array['message.status'],
  add constraint webhook_endpoints_events_known check (
    cardinality(events) > 0
    and events <@ array['message.status', 'message.received', 'contact.opted_out', 'contact.opted_in', 'balance.low']
  );

-- Rows written before this migration are all message.status events (test events included).
alter table webhook_events add column event text not null default 'message.status';

alter table accounts
  add column low_balance_threshold bigint,
  add constraint accounts_low_balance_threshold_positive check (low_balance_threshold is null or low_balance_threshold > 0);
