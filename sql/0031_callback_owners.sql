-- why: a provider callback may change only what the sender whose secret verified it owns (issue 28).
-- A status report parked until its message's SID is stored keeps the senders its signer spoke for, so
-- that it is applied later under the same rule: the stored senders' ids, 0 standing for the deployment's
-- default number. Reports parked before this migration carry no signer and are never applied (they
-- expire within the hour): a report cannot gain an owner it was not signed for.
alter table parked_reports add column signer_senders bigint[] not null default '{}';

-- A late failure reported through a stored sender's own credentials (which the tenant may hold) is
-- refunded only when the operator trusts that sender's late failures: 'refund' or 'keep' (charged).
-- Safe by default for a provider whose credentials a tenant can bring (Twilio, Meta); the simulator's
-- reports are made by the service itself. Existing senders take the same defaults.
alter table senders add column late_failures text;
update senders set late_failures = case when provider = 'simulator' then 'refund' else 'keep' end;
alter table senders alter column late_failures set not null;
alter table senders add constraint senders_late_failures_known check (late_failures in ('refund', 'keep'));

-- Who holds a customer's conversation on a number several accounts send through (the deployment's
-- default number, sender_id null, or a stored sender given to several accounts): the account its
-- unquoted replies, opt-outs and message.received events belong to. Set by the first message an
-- account sends the phone through that number (found when the first reply comes), moved only by the
-- customer (a reply quoting another account's message) or by an operator; another account's send
-- never moves it.
create table conversation_holders (
  sender_id bigint references senders (id) on delete cascade,
  phone text not null,
  account_id bigint not null references accounts (id),
  source text not null,
  updated_at timestamptz not null default now(),
  constraint conversation_holders_source_known check (source in ('first_message', 'reply', 'operator'))
);
create unique index conversation_holders_number_phone on conversation_holders (coalesce(sender_id, 0), phone);
create index conversation_holders_account on conversation_holders (account_id);
