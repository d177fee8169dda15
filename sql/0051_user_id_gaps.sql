-- why: customers known by a WhatsApp user id, the gaps of issue 32 §1. message.status carries the
-- customer's user id where it is known: the message's `to` when it went to a user id, else the user id
-- linked to its phone on its number (customer_links), which the caller passes as `user_id`. A campaign
-- through a sender that cannot reach a user id (Twilio, the simulator) skips, uncharged, the contacts
-- known only by one, and counts them (user_id_only), as it counts opted-out recipients.
create function message_status_payload(
  at_text text, message_sid text, recipient text, status text, previous_status text,
  error_code integer, error_message text, is_test boolean, refunded boolean, user_id text
) returns text language sql stable as $$
  select '{"event":"message.status","timestamp":' || to_json(at_text)::text
    || ',"data":{"message_sid":' || coalesce(to_json(message_sid)::text, 'null')
    || ',"to":' || coalesce(to_json(recipient)::text, 'null')
    || case when user_id is not null then ',"user_id":' || to_json(user_id)::text else '' end
    || ',"status":' || coalesce(to_json(status)::text, 'null')
    || ',"previous_status":' || coalesce(to_json(previous_status)::text, 'null')
    || ',"error_code":' || coalesce(to_json(error_code)::text, 'null')
    || ',"error_message":' || coalesce(to_json(error_message)::text, 'null')
    || case when refunded is null then '' else ',"refunded":' || refunded::text end
    || case when is_test then ',"test":true' else '' end
    || '}}'
$$;

alter table campaigns add column user_id_only integer not null default 0;
