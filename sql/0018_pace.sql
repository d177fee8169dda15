-- The pace of hand-offs (issue 17), kept in the database so that every instance on one database
-- shares it. A sender (today the deployment's provider; its name is the key) takes at most `rate`
-- messages per second, and one recipient at most one message every `gap` milliseconds. A hand-off
-- reserves its slot with one short statement (pace_take) and waits for it outside any transaction;
-- a throttling answer of the provider lowers the rate (pace_throttled), which climbs back to the
-- ceiling by itself (additive increase, multiplicative decrease).

create table sender_paces (
  sender text primary key,
  next_at timestamptz not null,           -- the first free slot
  backed_off_rate double precision,        -- the rate right after the last decrease (null: never throttled)
  backed_off_at timestamptz                -- when it was decreased
);

create table recipient_paces (
  sender text not null,
  phone text not null,
  next_at timestamptz not null,            -- when this recipient may have its next message
  primary key (sender, phone)
);
create index recipient_paces_next_at on recipient_paces (next_at);

-- The sender's rate now: the ceiling, or after a throttle the decreased rate climbing back to it by
-- ceiling/10 each second.
create function pace_rate(p sender_paces, ceiling double precision, at timestamptz) returns double precision
language sql immutable as $$
  select case when p.backed_off_at is null then ceiling
              else least(ceiling, p.backed_off_rate + ceiling / 10 * extract(epoch from at - p.backed_off_at)) end
$$;

-- Reserves one slot per phone, in order, and answers how long each must wait (ms, from the
-- database's clock) and whether it got a slot (`slot`). A recipient still within its gap gets no slot:
-- its wait says when to ask again, and the sender's slots go on to the others (one busy recipient
-- never holds up a sender). With `max_wait_ms` (a single send), nothing is reserved when the slot is
-- further than that: no slot, and the wait it would have had. The sender's row is locked for the
-- statement only; the waiting happens in the caller, after it.
create function pace_take(sender_key text, ceiling double precision, gap_ms integer, phones text[], max_wait_ms integer)
returns table (wait_ms double precision, slot boolean) language plpgsql as $$
declare
  now_at timestamptz := clock_timestamp();
  row_pace sender_paces;
  step interval;
  next_slot timestamptz;
  recipient_at timestamptz;
  phone_i text;
begin
  insert into sender_paces (sender, next_at) values (sender_key, now_at) on conflict (sender) do nothing;
  select * into row_pace from sender_paces where sender = sender_key for update;
  step := make_interval(secs => 1.0 / greatest(pace_rate(row_pace, ceiling, now_at), 0.01));
  next_slot := greatest(row_pace.next_at, now_at);
  foreach phone_i in array phones loop
    recipient_at := null;
    if gap_ms > 0 then
      select next_at into recipient_at from recipient_paces where sender = sender_key and phone = phone_i for update;
    end if;
    if recipient_at > next_slot then
      wait_ms := extract(epoch from recipient_at - now_at) * 1000; slot := false;
      return next;
    elsif max_wait_ms is not null and next_slot - now_at > make_interval(secs => max_wait_ms / 1000.0) then
      wait_ms := extract(epoch from next_slot - now_at) * 1000; slot := false;
      return next;
    else
      if gap_ms > 0 then
        insert into recipient_paces (sender, phone, next_at) values (sender_key, phone_i, next_slot + make_interval(secs => gap_ms / 1000.0))
        on conflict (sender, phone) do update set next_at = excluded.next_at;
      end if;
      wait_ms := greatest(0, extract(epoch from next_slot - now_at) * 1000); slot := true;
      return next;
      next_slot := next_slot + step;
    end if;
  end loop;
  update sender_paces set next_at = next_slot where sender = sender_key;
end $$;

-- A throttling answer. Sender or business-account scope: the rate drops by a fifth (not below a tenth
-- of a message per second; at most once a second, since the hand-offs in flight when the limit was hit
-- all come back throttled together) and no slot is given before `retry_after_ms`; the recipient's
-- gap the refused attempt reserved is given back (nothing reached them). Recipient scope: that
-- recipient waits `retry_after_ms`.
create function pace_throttled(sender_key text, ceiling double precision, scope text, phone_key text, retry_after_ms integer)
returns void language plpgsql as $$
declare
  now_at timestamptz := clock_timestamp();
  row_pace sender_paces;
begin
  if scope = 'recipient' then
    insert into recipient_paces (sender, phone, next_at) values (sender_key, phone_key, now_at + make_interval(secs => retry_after_ms / 1000.0))
    on conflict (sender, phone) do update set next_at = greatest(recipient_paces.next_at, excluded.next_at);
    return;
  end if;
  insert into sender_paces (sender, next_at) values (sender_key, now_at) on conflict (sender) do nothing;
  select * into row_pace from sender_paces where sender = sender_key for update;
  if row_pace.backed_off_at is null or row_pace.backed_off_at < now_at - interval '1 second' then
    update sender_paces
    set backed_off_rate = greatest(0.1, pace_rate(row_pace, ceiling, now_at) * 0.8), backed_off_at = now_at
    where sender = sender_key;
  end if;
  update sender_paces set next_at = greatest(next_at, now_at + make_interval(secs => retry_after_ms / 1000.0))
  where sender = sender_key;
  update recipient_paces set next_at = now_at where sender = sender_key and phone = phone_key and next_at > now_at;
end $$;

-- How long a charged message may wait for the provider before it fails and is refunded (throttling
-- answers are retried until then). Set from the request's validity_seconds or the default.
alter table messages add column valid_until timestamptz;
-- A message answered `queued` (its outcome came after the answer): its hand-off outcome is announced
-- by a message.status event (previous_status `queued`).
alter table messages add column announce_outcome boolean not null default false;
