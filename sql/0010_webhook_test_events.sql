-- why: the dashboard: its "send a test event" goes through the normal delivery outbox, and a test event
-- belongs to no message: message_id becomes optional (null only for test events, whose payload says
-- data.test = true). Per-message ordering is unaffected: null never equals null.
alter table webhook_events alter column message_id drop not null;
-- The dashboard's message page lists a message's deliveries, finished ones too.
create index webhook_events_message on webhook_events (message_id, id);
