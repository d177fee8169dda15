-- why: money follows the outcome. A message the provider accepted and later reported failed is
-- refunded exactly once, in the statement of its status change (ledger/service.ts's
-- lateFailureRefunds, ridden by status/machine.ts), unless it was charged under a price that keeps
-- late failures charged. The choice belongs to a price (the global one, or an account's own) and is
-- fixed on each message when it is charged, as its cost is: changing it later changes nothing for
-- messages already charged. The message.status body of a failure says whether it was refunded.

alter table prices add column refund_late_failures boolean not null default true;
-- Messages charged before this migration are refunded when they fail later (the spec's promise).
alter table messages add column refund_late_failure boolean not null default true;

-- The choice in force for an account now: its own price's, else the global price's (as account_price).
create function account_refunds_late_failures(account bigint) returns boolean language sql stable as $$
  select coalesce(
    (select refund_late_failures from prices where account_id = account),
    (select refund_late_failures from prices where account_id is null))
$$;

-- The message.status body (0011's), with `refunded` after `error_message` when it is not null (the
-- state machine gives it for failures only). The fields that were there keep their order.
create function message_status_payload(
  at_text text, message_sid text, recipient text, status text, previous_status text,
  error_code integer, error_message text, is_test boolean, refunded boolean
) returns text language sql stable as $$
  select '{"event":"message.status","timestamp":' || to_json(at_text)::text
    || ',"data":{"message_sid":' || coalesce(to_json(message_sid)::text, 'null')
    || ',"to":' || coalesce(to_json(recipient)::text, 'null')
    || ',"status":' || coalesce(to_json(status)::text, 'null')
    || ',"previous_status":' || coalesce(to_json(previous_status)::text, 'null')
    || ',"error_code":' || coalesce(to_json(error_code)::text, 'null')
    || ',"error_message":' || coalesce(to_json(error_message)::text, 'null')
    || case when refunded is null then '' else ',"refunded":' || refunded::text end
    || case when is_test then ',"test":true' else '' end
    || '}}'
$$;

-- The 0011 form (without `refunded`) is the same body without the field: one text, one definition.
create or replace function message_status_payload(
  at_text text, message_sid text, recipient text, status text, previous_status text,
  error_code integer, error_message text, is_test boolean
) returns text language sql stable as $$
  select message_status_payload(at_text, message_sid, recipient, status, previous_status, error_code, error_message, is_test, null)
$$;
