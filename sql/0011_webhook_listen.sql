-- why: webhooks on a laptop. `admin webhook listen` streams a key's events to a developer's machine:
-- a key being listened to gets its events recorded even without a registered URL (status
-- 'listen_only': streamed, never delivered, not a delivery), signed with a listen secret kept per key.
-- Development URLs (http://localhost, http://127.0.0.1) may be registered when WEBHOOK_ALLOW_PRIVATE
-- is set. New payloads are compact JSON in the spec's field order.

-- One row per key ever listened to: its listen secret (stable across sessions) and until when events
-- are recorded for it (each connected listener pushes this 30 s ahead every 10 s).
create table webhook_listeners (
  api_key_id bigint primary key references api_keys (id) on delete cascade,
  signing_secret text not null,
  listening_until timestamptz not null,
  created_at timestamptz not null default now()
);

alter table webhook_events drop constraint webhook_events_status_known;
alter table webhook_events add constraint webhook_events_status_known check (status in ('pending', 'delivered', 'failed', 'listen_only'));

-- Plain http only to this machine: the application rule (lib/address.ts) is stricter still.
alter table webhook_endpoints drop constraint webhook_endpoints_url_https;
alter table webhook_endpoints add constraint webhook_endpoints_url_scheme check (
  url like 'https://%' or url ~ '^http://(localhost|[^/?#@]*\.localhost|127\.[0-9]+\.[0-9]+\.[0-9]+|\[::1\])(:[0-9]+)?/'
);

-- The message.status body as compact JSON in the spec's field order. json_build_object writes
-- `"key" : value` with spaces and jsonb reorders keys, so the text is assembled here; to_json escapes
-- each string exactly as JSON.stringify does. Rows written before this migration keep their stored
-- text (every attempt of an event sends the same bytes).
create function message_status_payload(
  at_text text, message_sid text, recipient text, status text, previous_status text,
  error_code integer, error_message text, is_test boolean
) returns text language sql stable as $$
  select '{"event":"message.status","timestamp":' || to_json(at_text)::text
    || ',"data":{"message_sid":' || coalesce(to_json(message_sid)::text, 'null')
    || ',"to":' || coalesce(to_json(recipient)::text, 'null')
    || ',"status":' || coalesce(to_json(status)::text, 'null')
    || ',"previous_status":' || coalesce(to_json(previous_status)::text, 'null')
    || ',"error_code":' || coalesce(to_json(error_code)::text, 'null')
    || ',"error_message":' || coalesce(to_json(error_message)::text, 'null')
    || case when is_test then ',"test":true' else '' end
    || '}}'
$$;
