-- why: settled on the provider's word (issue 31). Meta's status webhooks say how it priced each
-- message (`pricing`); when that category's price differs from what was charged, the state machine's
-- statement settles the message once (settled_at: guarded in SQL, so a repeated or late report does
-- nothing more), with a `settlement` ledger row, and its `cost` becomes what it finally cost. An upward
-- difference takes what the balance has (never below 0); what it could not take stays in `unsettled`.

alter table messages
  add column settled_at timestamptz,
  add column settled_category text,
  add column unsettled bigint not null default 0;

alter table ledger drop constraint ledger_kind_known;
alter table ledger add constraint ledger_kind_known check (kind in ('topup', 'charge', 'refund', 'adjustment', 'settlement'));
