-- why: the statement that writes a webhook event also announces it (issue 29). Every writer used to
-- call eventsCommitted after its commit to wake the delivery worker and the listen streams, and two
-- (opt-outs, a low balance) never did: their events waited for the next poll. Now the table does it,
-- whoever writes: a NOTIFY on `webhook_events` is queued in the writing transaction and delivered at
-- its commit (never for a rollback), once per transaction however many rows or statements
-- (PostgreSQL folds equal notifications), to every session that LISTENs: this instance's and the
-- others' (src/modules/webhooks/notify.ts).

create function webhook_events_notify() returns trigger language plpgsql as $$
begin
  perform pg_notify('webhook_events', '');
  return null;
end
$$;

-- New events, pending or listen_only (the listen streams follow both), once per statement that wrote
-- any: a statement that found no target (no registration chose the type) wakes nobody.
create function webhook_events_inserted() returns trigger language plpgsql as $$
begin
  if exists (select 1 from added) then
    perform pg_notify('webhook_events', '');
  end if;
  return null;
end
$$;

create trigger webhook_events_inserted after insert on webhook_events
  referencing new table as added for each statement execute function webhook_events_inserted();

-- An event made new again (a replay: pending, its attempts reset), due at once. The delivery worker's
-- own updates (claims count an attempt, outcomes) do not wake it, except a stopping worker's release of
-- a first attempt it never made (its attempts back to 0): that wakes the other instances, as it should.
create trigger webhook_events_replayed after update of status, attempts, next_attempt_at on webhook_events
  for each row when (new.status = 'pending' and new.attempts = 0) execute function webhook_events_notify();
