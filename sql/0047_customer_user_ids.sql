-- why: customers known by a WhatsApp business-scoped user id (issue 32 §1). Since 2026 a WhatsApp user may
-- hide the phone number behind a username; Meta's webhooks then name the customer by a user id
-- (`ID.13491208655302741918`), stable per business portfolio. Every `phone` column that keys a customer
-- (inbound_messages, contacts, opt_outs, conversation_holders, messages, messaging_uses) holds the
-- customer's key: the phone when one is known, else the user id. customer_links records what Meta said
-- of a user id and a phone seen together, per number it said it on (sender_key: the sender's id, 0 for
-- the deployment's number): the link re-keys the user id's rows to the phone (modules/inbound/customers.ts).
create table customer_links (
  sender_key bigint not null,
  user_id text not null,
  phone text not null,
  updated_at timestamptz not null default now(),
  constraint customer_links_pkey primary key (sender_key, user_id)
);
create index customer_links_phone on customer_links (sender_key, phone);

-- The user id beside the phone, where the service shows the customer: what a message came from, a contact.
alter table inbound_messages add column user_id text;
alter table contacts add column user_id text;
create index contacts_user_id on contacts (account_id, user_id) where user_id is not null;

-- message.status carries `user_id` when the message went to a customer known only by a user id (its `to`).
create or replace function message_status_payload(
  at_text text, message_sid text, recipient text, status text, previous_status text,
  error_code integer, error_message text, is_test boolean, refunded boolean
) returns text language sql stable as $$
  select '{"event":"message.status","timestamp":' || to_json(at_text)::text
    || ',"data":{"message_sid":' || coalesce(to_json(message_sid)::text, 'null')
    || ',"to":' || coalesce(to_json(recipient)::text, 'null')
    || case when recipient ~ '^[A-Z]{2}\.' then ',"user_id":' || to_json(recipient)::text else '' end
    || ',"status":' || coalesce(to_json(status)::text, 'null')
    || ',"previous_status":' || coalesce(to_json(previous_status)::text, 'null')
    || ',"error_code":' || coalesce(to_json(error_code)::text, 'null')
    || ',"error_message":' || coalesce(to_json(error_message)::text, 'null')
    || case when refunded is null then '' else ',"refunded":' || refunded::text end
    || case when is_test then ',"test":true' else '' end
    || '}}'
$$;
